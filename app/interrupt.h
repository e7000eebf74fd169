// Ctrl-C, SIGTERM and SIGHUP during a headless run, compare or lesson: the first one asks the run
// to stop (the controller stops the ranks and writes what they recorded, status "interrupted"),
// and the command then exits 128 + the signal. A second one ends the process at once, by that
// signal: it removes the outputs' partial files and says in one line which outputs were kept (those
// the command announced: files/unfinished_outputs.h).
#pragma once

#include <string>

namespace shardscope::app {

// What a second signal's line says it ended without (a static string: the handler reads it).
constexpr const char* kEndsWithTheRanks = "without waiting for the ranks (they end with it)";
constexpr const char* kEndsWithoutTheCollector =
    "without waiting for the ranks' last events (the ranks run on, on their hosts; the files of "
    "--trace-dir hold what came before)";

// Signals ignored at start (nohup, a background job's SIGINT) stay ignored. `endedWithout` is what
// the second signal's line says the process ended without.
void installInterruptHandlers(const char* endedWithout = kEndsWithTheRanks);

// The signal received, or 0.
int interruptSignal();

// "SIGINT (Ctrl-C)", "SIGTERM", "SIGHUP".
std::string signalName(int signal);

}  // namespace shardscope::app
