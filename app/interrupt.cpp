#include "app/interrupt.h"

#include <signal.h>

#include <csignal>

namespace shardscope::app {

namespace {

volatile std::sig_atomic_t gSignal = 0;

void onSignal(int signal) {
  if (gSignal != 0) {  // asked twice: stop waiting for the ranks
    std::signal(signal, SIG_DFL);
    std::raise(signal);
    return;
  }
  gSignal = signal;
}

}  // namespace

void installInterruptHandlers() {
  struct sigaction action = {};
  action.sa_handler = onSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int s : {SIGINT, SIGTERM, SIGHUP}) {
    // A signal ignored when we started stays ignored: nohup's SIGHUP, a shell's SIGINT for a
    // background job.
    struct sigaction before = {};
    if (sigaction(s, nullptr, &before) == 0 && before.sa_handler == SIG_IGN) continue;
    sigaction(s, &action, nullptr);
  }
}

int interruptSignal() { return gSignal; }

std::string signalName(int signal) {
  switch (signal) {
    case SIGINT:
      return "SIGINT (Ctrl-C)";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
  }
  return "signal " + std::to_string(signal);
}

}  // namespace shardscope::app
