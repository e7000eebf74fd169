// Launching a run: one OS process per rank, started as torchrun starts them (the torchrun
// variables, a rendezvous store hosted here as torchrun's agent hosts it), each with a pipe for
// its events and, under --step-gate, a socket for its releases. And what the controller can ask of
// a rank process once it runs: stop it, release it, say how it ended.
#pragma once

#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "engine/launch/run_types.h"
#include "trace/wire.h"

namespace shardscope::engine {

struct RankProcess {
  int rank = 0;
  pid_t pid = -1;
  int eventFd = -1;  // read end of the rank's event pipe; -1 once closed
  bool exited = false;
  int waitStatus = 0;
  std::string reportedError;  // from a RankError event
  int lastStep = -1;          // last step the rank finished
  trace::StreamSplitter items;
  int gateFd = -1;             // --step-gate: our end of the rank's release socket; -1 without
  bool waitingAtGate = false;  // the rank said it waits at the gate and was not released since
  std::string waitingBefore;   // the event group it waits before
  int waitingStep = -1;
  bool killedByController = false;  // it did not stop within the grace after SIGTERM: SIGKILLed
};

// Seconds a rank has, after SIGTERM, to send what it recorded and exit before it is SIGKILLed.
constexpr int kStopGraceSeconds = 3;

// A run's ranks, started, with what must outlive them: the config file they read and the store
// they meet in. The constructor throws std::runtime_error naming what could not be set up (no
// loopback, no temporary directory, no pipes); ranks already started are then killed and waited
// for. Destroying it closes the gate sockets, then the store, then removes the config file: the
// caller waits for every rank first.
class LaunchedRanks {
 public:
  // `workerExecutable` is the shardscope binary to start with `worker --config FILE`.
  LaunchedRanks(const config::RunConfig& config, const std::string& workerExecutable);
  ~LaunchedRanks();
  LaunchedRanks(const LaunchedRanks&) = delete;
  LaunchedRanks& operator=(const LaunchedRanks&) = delete;

  std::vector<RankProcess>& ranks() { return ranks_; }
  // Forked without exec (engine/launch/rank_fork.h), or exec'd as `shardscope worker`.
  bool forked() const { return forked_; }

 private:
  int configFd_ = -1;                      // the configuration every rank reads (a memfd, /dev/fd/N)
  c10::intrusive_ptr<c10d::Store> store_;  // the rendezvous store on 127.0.0.1
  std::vector<RankProcess> ranks_;
  bool forked_ = false;
};

// Sends `signal` to every rank still running; SIGKILL marks them killed by the controller.
void signalRanks(std::vector<RankProcess>& ranks, int signal);

// Hands each live rank one release token (engine/launch/step_gate.h): 's' for one event group, 'c' for good.
void releaseRanks(std::vector<RankProcess>& ranks, char token);

// Where the ranks stand at the gate: how many wait, and before what.
GateStatus gateStatusOf(const std::vector<RankProcess>& ranks);

// SIGKILLed by the controller: asked for, and what ended it (a rank that had exited already but
// was not yet waited for was not).
bool wasKilledByController(const RankProcess& p);

// Whether the rank's pipe holds bytes not yet read.
bool hasPendingBytes(const RankProcess& p);

// How it ended, for a message: "died: killed by signal 9 (Killed)", "exited with status 1".
std::string describeExit(const RankProcess& p);

// Exited with a signal or a non-zero status.
bool rankFailed(const RankProcess& p);

// Died of a signal that was not shardscope's own stop (SIGTERM, or the SIGKILL after its grace):
// killed from outside, or crashed.
bool diedOfASignal(const RankProcess& p);

// When one rank dies its peers fail too (their connections close). The root cause is the rank that
// was killed, else one whose error is not a lost connection, else the first one seen.
int rootCause(const std::vector<RankProcess>& ranks, const std::vector<int>& failureOrder);

}  // namespace shardscope::engine
