#include "app/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <csignal>

#include "files/unfinished_outputs.h"

namespace shardscope::app {

namespace {

volatile std::sig_atomic_t gSignal = 0;
std::atomic<const char*> gEndedWithout{kEndsWithTheRanks};

const char* signalLabel(int signal) {
  switch (signal) {
    case SIGINT:
      return "SIGINT (Ctrl-C)";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
  }
  return nullptr;
}

void append(char* out, size_t size, size_t& at, const char* text) {
  while (*text && at + 1 < size) out[at++] = *text++;
}

// Asked twice: the user will not wait for the ranks' grace and the outputs, so the process ends
// now, by the signal (the shell sees 128 + it). Before it does, it removes the partial outputs and
// says, in one line, what was kept. A handler: async-signal-safe calls only (unlink, write,
// sigaction, sigprocmask, raise), the line built in a static buffer that one handler uses: the
// three signals block each other, and a handler on another thread leaves the ending to the first.
// The ranks die with this process (PR_SET_PDEATHSIG).
void endAtOnce(int signal) {
  static std::atomic_flag ending = ATOMIC_FLAG_INIT;
  static char line[16384];
  if (ending.test_and_set()) return;
  shardscope::files::removeTemporariesNow();
  size_t at = 0;
  append(line, sizeof line, at, "shardscope: interrupted again by ");
  append(line, sizeof line, at, signalLabel(signal) ? signalLabel(signal) : "a signal");
  append(line, sizeof line, at, ": ended at once, ");
  append(line, sizeof line, at, gEndedWithout.load());
  append(line, sizeof line, at, ".");
  const size_t outputs = shardscope::files::describeAnnouncedOutputs(line + at + 1, sizeof line - at - 2);
  if (outputs > 0) {
    line[at] = ' ';
    at += 1 + outputs;
  }
  line[at++] = '\n';
  for (size_t done = 0; done < at;) {
    const ssize_t n = ::write(STDERR_FILENO, line + done, at - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  struct sigaction byDefault = {};
  byDefault.sa_handler = SIG_DFL;
  sigemptyset(&byDefault.sa_mask);
  ::sigaction(signal, &byDefault, nullptr);
  sigset_t self;
  sigemptyset(&self);
  sigaddset(&self, signal);
  ::sigprocmask(SIG_UNBLOCK, &self, nullptr);
  std::raise(signal);
  ::_exit(128 + signal);  // only if the signal did not end it
}

void onSignal(int signal) {
  if (gSignal != 0) {
    endAtOnce(signal);
    return;
  }
  gSignal = signal;
}

}  // namespace

void installInterruptHandlers(const char* endedWithout) {
  gEndedWithout.store(endedWithout);
  struct sigaction action = {};
  action.sa_handler = onSignal;
  sigemptyset(&action.sa_mask);
  // Each blocks the others while it runs: a SIGTERM cannot break into a SIGINT's endAtOnce.
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&action.sa_mask, s);
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
  if (const char* label = signalLabel(signal)) return label;
  return "signal " + std::to_string(signal);
}

}  // namespace shardscope::app
