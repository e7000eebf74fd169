// Ctrl-C, SIGTERM and SIGHUP during a headless run, compare or lesson: the first one asks the run
// to stop (the controller stops the ranks and writes what they recorded, status "interrupted"),
// and the command then exits 128 + the signal. A second one ends the process at once.
#pragma once

#include <string>

namespace shardscope::app {

// Signals ignored at start (nohup, a background job's SIGINT) stay ignored.
void installInterruptHandlers();

// The signal received, or 0.
int interruptSignal();

// "SIGINT (Ctrl-C)", "SIGTERM", "SIGHUP".
std::string signalName(int signal);

}  // namespace shardscope::app
