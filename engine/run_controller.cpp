#include "engine/run_controller.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/cuda.h>

#include "engine/run_summary.h"
#include "engine/stall_watch.h"
#include "engine/tensor_files.h"
#include "trace/chrome_trace.h"
#include "trace/output_file.h"
#include "trace/rank_placements.h"
#include "trace/stream_merger.h"
#include "trace/wire.h"

extern char** environ;

namespace shardscope {

namespace {

// The rendezvous store, hosted here as torchrun's elastic agent hosts it (the ranks are told so
// with TORCHELASTIC_USE_AGENT_STORE). c10d's TCPStore would listen on every interface; it is handed
// a socket of ours instead (masterListenFd), bound to the loopback address only, on a port the
// kernel picks and that is held from the start: a port picked, released and then handed to rank 0
// could be taken in between by another run starting at the same moment.
c10::intrusive_ptr<c10d::TCPStore> hostRendezvousStore() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(fd, SOMAXCONN) != 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    throw std::runtime_error("cannot host the ranks' rendezvous store on 127.0.0.1: " + why +
                             " (the ranks meet over the loopback interface; is it up?)");
  }
  c10d::TCPStoreOptions options;
  options.port = ntohs(address.sin_port);
  options.masterListenFd = fd;  // the store owns it from here
  options.isServer = true;
  options.waitWorkers = false;  // the ranks' backends wait for each other through it
  options.timeout = std::chrono::seconds(120);
  try {
    return c10::make_intrusive<c10d::TCPStore>("127.0.0.1", options);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("cannot host the ranks' rendezvous store on 127.0.0.1: ") +
                             e.what() + " (the ranks meet over the loopback interface; is it up?)");
  }
}

// Another local user can still reach a loopback port, and write keys a rank then reads as peers'
// addresses. Each run's keys sit under a prefix of 128 random bits that only its ranks are told
// (in their environment, which other users cannot read), so a stranger cannot name them.
std::string unguessableStorePrefix() {
  std::random_device entropy;  // /dev/urandom
  std::string prefix = "run-";
  char hex[9];
  for (int i = 0; i < 4; ++i) {
    std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(entropy()));
    prefix += hex;
  }
  return prefix;
}

struct RankProcess {
  int rank = 0;
  pid_t pid = -1;
  int eventFd = -1;  // read end of the rank's event pipe; -1 once closed
  bool exited = false;
  int waitStatus = 0;
  std::string reportedError;  // from a RankError event
  int lastStep = -1;          // last step the rank finished
  trace::LineSplitter lines;
  int gateFd = -1;            // --step-gate: our end of the rank's release socket; -1 without
  bool waitingAtGate = false; // the rank said it waits at the gate and was not released since
  std::string waitingBefore;  // the event group it waits before
  int waitingStep = -1;
  bool killedByController = false;  // it did not stop within the grace after SIGTERM: SIGKILLed
};

// Seconds a rank has, after SIGTERM, to send what it recorded and exit before it is SIGKILLed.
constexpr int kStopGraceSeconds = 3;

// Hands each live rank one release token (engine/step_gate.h). A socket, not a pipe, so a rank
// that died meanwhile is an error to ignore here (MSG_NOSIGNAL), never a SIGPIPE.
void releaseRanks(std::vector<RankProcess>& ranks, char token) {
  for (auto& p : ranks) {
    if (p.gateFd < 0 || p.exited) continue;
    (void)::send(p.gateFd, &token, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    p.waitingAtGate = false;
  }
}

GateStatus gateStatusOf(const std::vector<RankProcess>& ranks) {
  GateStatus status;
  status.ranks = static_cast<int>(ranks.size());
  for (const auto& p : ranks) {
    if (!p.waitingAtGate || p.exited) continue;
    if (status.waiting++ == 0) {
      status.next = p.waitingBefore;
      status.step = p.waitingStep;
    }
  }
  return status;
}

// SIGKILLed by the controller: asked for, and what ended it (a rank that had exited already but
// was not yet waited for was not).
bool wasKilledByController(const RankProcess& p) {
  return p.killedByController && WIFSIGNALED(p.waitStatus) && WTERMSIG(p.waitStatus) == SIGKILL;
}

// Whether the rank's pipe holds bytes not yet read.
bool hasPendingBytes(const RankProcess& p) {
  if (p.eventFd < 0) return false;
  pollfd fd{p.eventFd, POLLIN, 0};
  return ::poll(&fd, 1, 0) > 0 && (fd.revents & POLLIN);
}

std::string describeExit(const RankProcess& p) {
  if (wasKilledByController(p)) {
    return "was killed by shardscope (SIGKILL), as it had not stopped within " +
           std::to_string(kStopGraceSeconds) + " s of being asked to";
  }
  if (WIFSIGNALED(p.waitStatus)) {
    const int sig = WTERMSIG(p.waitStatus);
    return "died: killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "exited with status " + std::to_string(WEXITSTATUS(p.waitStatus));
}

bool failed(const RankProcess& p) {
  return p.exited && (WIFSIGNALED(p.waitStatus) || WEXITSTATUS(p.waitStatus) != 0);
}

// When one rank dies its peers fail too (their connections close). The root cause is the rank that
// was killed, else one whose error is not a lost connection, else the first one seen.
int rootCause(const std::vector<RankProcess>& ranks, const std::vector<int>& failureOrder) {
  for (int r : failureOrder) {
    if (WIFSIGNALED(ranks[r].waitStatus) && WTERMSIG(ranks[r].waitStatus) != SIGTERM &&
        !wasKilledByController(ranks[r])) {
      return r;
    }
  }
  for (int r : failureOrder) {
    const auto& e = ranks[r].reportedError;
    if (!e.empty() && e.find("onnection") == std::string::npos &&
        e.find("peer") == std::string::npos && e.find("Socket") == std::string::npos) {
      return r;
    }
  }
  return failureOrder.front();
}

std::vector<std::string> rankEnvironment(const RunConfig& config, int rank, int port,
                                         const std::string& storePrefix, int eventFd, int gateFd) {
  std::vector<std::string> env;
  static const char* kOwned[] = {"RANK=", "WORLD_SIZE=", "LOCAL_RANK=", "LOCAL_WORLD_SIZE=",
                                 "MASTER_ADDR=", "MASTER_PORT=", "TORCHELASTIC_USE_AGENT_STORE=",
                                 "SHARDSCOPE_EVENT_FD=", "SHARDSCOPE_GATE_FD=",
                                 "SHARDSCOPE_STORE_PREFIX="};
  for (char** e = environ; *e; ++e) {
    bool owned = false;
    for (const char* prefix : kOwned) owned |= std::strncmp(*e, prefix, std::strlen(prefix)) == 0;
    if (!owned) env.emplace_back(*e);
  }
  env.push_back("RANK=" + std::to_string(rank));
  env.push_back("WORLD_SIZE=" + std::to_string(config.world));
  env.push_back("LOCAL_RANK=" + std::to_string(rank));
  env.push_back("LOCAL_WORLD_SIZE=" + std::to_string(config.world));
  env.push_back("MASTER_ADDR=127.0.0.1");
  env.push_back("MASTER_PORT=" + std::to_string(port));
  env.push_back("TORCHELASTIC_USE_AGENT_STORE=True");  // the controller hosts the store
  env.push_back("SHARDSCOPE_EVENT_FD=" + std::to_string(eventFd));
  env.push_back("SHARDSCOPE_STORE_PREFIX=" + storePrefix);
  if (gateFd >= 0) env.push_back("SHARDSCOPE_GATE_FD=" + std::to_string(gateFd));
  return env;
}

class TempConfigFile {
 public:
  explicit TempConfigFile(const RunConfig& config) {
    const char* tmp = std::getenv("TMPDIR");
    std::string name = std::string(tmp && *tmp ? tmp : "/tmp") + "/shardscope-run-XXXXXX";
    int fd = ::mkstemp(name.data());
    if (fd < 0) throw std::runtime_error("cannot create a temporary config file in " + name.substr(0, name.rfind('/')));
    ::close(fd);
    path_ = name;
    auto json = config.toJson();
    json["export"] = config.exportDir;
    std::ofstream(path_) << json.dump() << "\n";
  }
  ~TempConfigFile() { ::unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Every output is written even when another fails (a CSV on a full disk must not cost the trace);
// each failure is kept in the result, by name, and makes the run's exit status non-zero.
void finishOutputs(const RunConfig& config, RunResult& result, const trace::RunRecording& recording) {
  auto keep = [&](std::optional<std::string> error) {
    if (error) result.outputErrors.push_back(*error);
  };
  if (!config.tracePath.empty()) {
    keep(trace::writeOutputFile(config.tracePath, [&](std::ostream& out) {
      trace::writeChromeTrace(out, recording, summaryJson(config, result, recording)["config"]);
    }));
  }
  if (!config.memoryCsvPath.empty()) {
    keep(trace::writeOutputFile(config.memoryCsvPath,
                                [&](std::ostream& out) { trace::writeMemoryCsv(out, recording); }));
  }
  if (!config.exportDir.empty() && !result.losses.empty()) {
    try {
      saveTensor(config.exportDir + "/losses.pt",
                 at::tensor(result.losses, at::TensorOptions().dtype(at::kDouble)).to(at::kFloat));
    } catch (const std::exception& e) {
      result.outputErrors.push_back("cannot write '" + config.exportDir + "/losses.pt': " + e.what());
    }
  }
  // Last, so it can name the outputs that failed before it.
  if (!config.summaryPath.empty()) keep(writeSummaryFile(config.summaryPath, config, result, recording));
}

}  // namespace

std::optional<std::string> checkDeviceAvailable(const RunConfig& config) {
  if (config.device == DeviceKind::Cuda && torch::cuda::device_count() == 0) {
    return std::string("--device cuda, but no CUDA device is visible here. Use --device cpu, or "
                       "run on a machine with an NVIDIA GPU.");
  }
  return std::nullopt;
}

RunResult runTraining(const RunConfig& config, const std::string& workerExecutable,
                      const RunCallbacks& callbacks, const RecordingSink& sink) {
  RunResult result;
  result.worldSize = config.world;
  result.stepSeconds.assign(config.world, {});
  result.rankPlacements.assign(config.world, "");
  if (auto error = checkDeviceAvailable(config)) {
    result.error = *error;
    finishOutputs(config, result, result.recording);
    return result;
  }
  if (auto error = makeOutputDirectories(config)) {
    result.error = *error;
    finishOutputs(config, result, result.recording);
    return result;
  }

  if (!config.exportDir.empty()) {
    // The run's own description next to its tensors, so an outside check can rebuild the model.
    const std::string text = config.toJson().dump(2);
    if (auto error = trace::writeOutputFile(config.exportDir + "/config.json",
                                            [&](std::ostream& out) { out << text << "\n"; })) {
      result.outputErrors.push_back(*error);
    }
  }
  TempConfigFile configFile(config);
  // Outlives the ranks: declared before them, so destroyed after every rank has been waited for.
  c10::intrusive_ptr<c10d::TCPStore> store;
  try {
    store = hostRendezvousStore();
  } catch (const std::exception& e) {
    result.error = e.what();
    finishOutputs(config, result, result.recording);
    return result;
  }
  const int port = store->getPort();
  const std::string storePrefix = unguessableStorePrefix();
  const bool gated = config.stepGate != StepGateMode::Off;
  std::vector<RankProcess> ranks(config.world);
  struct CloseGates {
    std::vector<RankProcess>& ranks;
    ~CloseGates() {
      for (auto& p : ranks) {
        if (p.gateFd >= 0) ::close(p.gateFd);
      }
    }
  } closeGates{ranks};
  for (int r = 0; r < config.world; ++r) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
    int gate[2] = {-1, -1};  // [0]: ours, [1]: the rank's
    if (gated && ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, gate) != 0) {
      throw std::runtime_error("socketpair failed: cannot give the ranks a step gate");
    }
    // Everything the child needs is built before fork: after fork only async-signal-safe calls.
    auto envStrings = rankEnvironment(config, r, port, storePrefix, fds[1], gate[1]);
    std::vector<char*> envp;
    for (auto& s : envStrings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string arg0 = "shardscope", arg1 = "worker", arg2 = "--config", arg3 = configFile.path();
    char* argv[] = {arg0.data(), arg1.data(), arg2.data(), arg3.data(), nullptr};
    const pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a rank never outlives its controller
      // A process group of its own: Ctrl-C in the terminal reaches the controller alone, which then
      // stops the ranks and writes what they recorded (instead of every rank dying mid-event).
      ::setpgid(0, 0);
      if (::getppid() != parent) ::_exit(1);
      ::fcntl(fds[1], F_SETFD, 0);         // the write end survives exec
      if (gate[1] >= 0) ::fcntl(gate[1], F_SETFD, 0);
      ::execve(workerExecutable.c_str(), argv, envp.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    if (gate[1] >= 0) ::close(gate[1]);
    ranks[r].rank = r;
    ranks[r].pid = pid;
    ranks[r].eventFd = fds[0];
    ranks[r].gateFd = gate[0];
  }

  // The controller only observes: when it competes with the ranks for a core, the ranks win, and
  // it catches up while they wait on communication (the pipes and rank queues buffer meanwhile).
  // Per-thread nice, set after the fork so the ranks keep normal priority; restored on return.
  const auto tid = static_cast<id_t>(::gettid());
  const int previousNice = ::getpriority(PRIO_PROCESS, tid);
  ::setpriority(PRIO_PROCESS, tid, 19);
  struct RestoreNice {
    id_t tid;
    int nice;
    ~RestoreNice() { ::setpriority(PRIO_PROCESS, tid, nice); }
  } restoreNice{tid, previousNice};

  std::map<int, int> ranksDoneWithStep;  // step -> ranks that finished it
  std::map<int, double> lossOfStep;
  std::vector<int> failureOrder;
  const auto withRecording = [&](const std::function<void(trace::RunRecording&)>& use) {
    if (sink.withRecording) sink.withRecording(use);
    else use(result.recording);
  };
  withRecording([&](trace::RunRecording& r) { r.reset(config.world); });
  // With a sink, merged events wait here and go to its recording a batch at a time: one lock per batch.
  std::vector<trace::Event> merged;
  const auto appendMerged = [&] {
    if (merged.empty()) return;
    withRecording([&](trace::RunRecording& r) {
      for (const auto& e : merged) r.add(e);
    });
    merged.clear();
  };
  // Ranks stream mostly in time order; a window of a few drains (5 ms each) absorbs the rest.
  trace::StreamMerger merger(config.world, /*windowNs=*/50'000'000,
                             [&](const trace::Event& e) {
                               // A caller's recording takes a batch per lock; the run's own takes
                               // each event as it comes, with no copy in between.
                               if (sink.withRecording) merged.push_back(e);
                               else result.recording.add(e);
                               if (callbacks.onMerged) callbacks.onMerged(e);
                             });
  bool stoppedByUser = false;
  std::string diverged;  // why the run was stopped at a non-finite loss, or empty
  bool stopping = false;
  auto stopAll = [&](int signal) {
    for (auto& p : ranks) {
      if (p.exited) continue;
      ::kill(p.pid, signal);
      if (signal == SIGKILL) p.killedByController = true;  // counts only if SIGKILL is what ended it
    }
  };
  StallWatch stallWatch(config.world,
                        std::chrono::milliseconds(static_cast<int64_t>(config.stallTimeoutS * 1000)),
                        std::chrono::steady_clock::now());
  std::string stalled;  // why the run was stopped as stalled, or empty
  auto stopDeadline = std::chrono::steady_clock::time_point::max();
  // Asks every rank to stop (SIGTERM: each sends what it recorded, then exits); SIGKILL follows
  // for any still running after the grace.
  auto stopRun = [&] {
    stopping = true;
    stopAll(SIGTERM);
    stopDeadline = std::chrono::steady_clock::now() + std::chrono::seconds(kStopGraceSeconds);
  };

  auto handleEvent = [&](RankProcess& proc, const trace::Event& event) {
    if (callbacks.onEvent) callbacks.onEvent(event);
    stallWatch.sent(proc.rank, event);
    switch (event.kind) {
      case trace::EventKind::Memory:
      case trace::EventKind::Collective:
      case trace::EventKind::Compute:
      case trace::EventKind::Dropped:
        merger.push(event);
        break;
      case trace::EventKind::RunInfo:
        result.rankPlacements[proc.rank] = event.text;
        result.deviceDescription = trace::describeRankPlacements(result.rankPlacements);
        if (proc.rank == 0) {
          result.parameterCount = event.count;
          result.device = deviceFactsOf(event);
        }
        break;
      case trace::EventKind::StepEnd: {
        proc.lastStep = event.step;
        merger.push(event);
        result.stepSeconds[proc.rank].push_back(trace::activeStepNs(event) / 1e9);
        lossOfStep[event.step] = event.loss;
        if (++ranksDoneWithStep[event.step] == config.world) {
          double slowest = 0;
          for (const auto& s : result.stepSeconds) slowest = std::max(slowest, s.back());
          result.losses.push_back(event.loss);
          if (callbacks.onStep) callbacks.onStep(event.step, event.loss, slowest);
          if (!std::isfinite(event.loss) && diverged.empty()) {
            char lr[32];
            std::snprintf(lr, sizeof lr, "%g", config.lr);
            diverged = "the loss is " + std::string(std::isnan(event.loss) ? "nan" : "infinite") + " after step " +
                       std::to_string(event.step + 1) + " of " + std::to_string(config.steps) +
                       ": training diverged, so the run was stopped (what it recorded is kept). Lower --lr (it is " +
                       lr + "), e.g. --lr 0.001.";
          }
        }
        break;
      }
      case trace::EventKind::RankError:
        proc.reportedError = event.text;
        break;
      case trace::EventKind::RunDone:
        merger.push(event);
        break;
      case trace::EventKind::Group:
        if (event.endNs == 0) {  // "I wait at the gate now"
          proc.waitingAtGate = true;
          proc.waitingBefore = event.text;
          proc.waitingStep = event.step;
        } else {
          merger.push(event);
        }
        break;
    }
  };
  // --step-gate: tell the caller where the ranks wait, and pass on its Step or Continue.
  GateStatus lastGate;
  bool gateReleased = !gated;
  auto serveGate = [&] {
    if (gateReleased) return;
    const GateCommand command = callbacks.gateCommand ? callbacks.gateCommand() : GateCommand::Continue;
    if (command == GateCommand::Continue) {
      releaseRanks(ranks, 'c');
      gateReleased = true;
    } else if (command == GateCommand::Step) {
      releaseRanks(ranks, 's');
    }
    GateStatus now = gateStatusOf(ranks);
    now.released = gateReleased;
    if (now.waiting == now.ranks && lastGate.waiting != now.ranks) {
      // Every rank waits: nothing earlier is still to come from any of them, so what the merger
      // holds for its window goes to the recording now, and the view shows where they stand.
      merger.flush();
      appendMerged();
      if (callbacks.onIdle) callbacks.onIdle();
    }
    if (now.waiting != lastGate.waiting || now.next != lastGate.next || now.step != lastGate.step ||
        now.released != lastGate.released) {
      lastGate = now;
      if (callbacks.onGate) callbacks.onGate(now);
    }
  };

  for (;;) {
    std::vector<pollfd> fds;
    std::vector<RankProcess*> owners;
    for (auto& p : ranks) {
      if (p.eventFd >= 0) {
        fds.push_back({p.eventFd, POLLIN, 0});
        owners.push_back(&p);
      }
    }
    if (!fds.empty()) ::poll(fds.data(), fds.size(), 100);
    for (size_t i = 0; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      RankProcess& p = *owners[i];
      char buffer[65536];
      ssize_t n = ::read(p.eventFd, buffer, sizeof(buffer));
      if (n > 0) {
        stallWatch.heard(p.rank, std::chrono::steady_clock::now());
        p.lines.feed(buffer, static_cast<size_t>(n), [&](std::string_view line) {
          if (line.empty()) return;  // a heartbeat: heard above, nothing to decode
          if (auto event = trace::decodeEventLine(line)) handleEvent(p, *event);
        });
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        ::close(p.eventFd);
        p.eventFd = -1;
        merger.finishRank(p.rank);
        stallWatch.ended(p.rank);
      }
    }
    for (auto& p : ranks) {
      if (p.exited) continue;
      int status = 0;
      if (::waitpid(p.pid, &status, fds.empty() ? 0 : WNOHANG) == p.pid) {
        p.exited = true;
        p.waitStatus = status;
        if (failed(p)) failureOrder.push_back(p.rank);
      }
    }
    appendMerged();
    if (callbacks.onIdle) callbacks.onIdle();
    if (!stopping) serveGate();
    if (!stopping && callbacks.shouldStop && callbacks.shouldStop()) {
      stoppedByUser = true;
      stopRun();
    }
    if (!stopping) {
      const auto now = std::chrono::steady_clock::now();
      const int silent = stallWatch.stalledRank(now);
      // Bytes waiting in its pipe mean the rank spoke while this loop was away (a slow callback,
      // the window exporting a trace): not a stall; they are read on the next pass.
      if (silent >= 0 && !hasPendingBytes(ranks[silent])) {
        // A stopped or frozen rank holds every peer in its next collective until Gloo's timeout.
        stalled = stallWatch.describeStall(silent, now);
        stopRun();
      }
    }
    if (!diverged.empty() && !stopping) stopRun();  // every later step would be nan too

    if (!failureOrder.empty() && !stopping) {
      // Peers of a dead rank would wait in their collectives until Gloo's timeout: stop them now.
      stopRun();
    }
    if (stopping && std::chrono::steady_clock::now() > stopDeadline) stopAll(SIGKILL);
    bool allDone = true;
    for (const auto& p : ranks) allDone &= p.exited && p.eventFd < 0;
    if (allDone) break;
  }

  merger.flush();
  appendMerged();
  if (callbacks.onIdle) callbacks.onIdle();
  result.outOfOrderEvents = merger.outOfOrder();
  // A step any rank finished, every rank finished: a rank's step ends with the loss all-reduce,
  // which completes only once every rank has trained that step and sent its loss. So a killed rank
  // whose last step ends were still in its queue has them proven by its peers', and the run's
  // finished steps are all of those (the losses are the same on every rank).
  for (auto s = static_cast<int>(result.losses.size()); lossOfStep.count(s) > 0; ++s) {
    result.losses.push_back(lossOfStep[s]);
  }
  const int finishedSteps = static_cast<int>(result.losses.size());
  if (!diverged.empty()) {
    result.error = diverged;
  } else if (stoppedByUser) {
    result.stopped = true;
    result.error = "stopped by the user after " + std::to_string(result.losses.size()) + " of " +
                   std::to_string(config.steps) + " steps.";
  } else if (!stalled.empty()) {
    std::string killed;
    for (const auto& p : ranks) {
      if (wasKilledByController(p)) killed += (killed.empty() ? "" : ", ") + std::to_string(p.rank);
    }
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", config.stallTimeoutS);
    result.error = stalled + ". The run was stopped after " + std::to_string(finishedSteps) + " of " +
                   std::to_string(config.steps) + " steps" +
                   (killed.empty() ? "" : " (shardscope killed rank " + killed + ", which did not stop when asked)") +
                   "; what was recorded is kept. Is the rank stopped (SIGSTOP, a debugger)? If it may "
                   "rightly be silent that long, raise --stall-timeout (it is " + limit + " s).";
  } else if (failureOrder.empty()) {
    result.ok = true;
  } else {
    const RankProcess& cause = ranks[rootCause(ranks, failureOrder)];
    // The step it was in: the first that not every rank finished (its own step ends may have been
    // lost with it, so its lastStep can lag behind).
    const std::string where = finishedSteps < config.steps
                                  ? " during step " + std::to_string(finishedSteps + 1)
                                  : " after the last step";
    result.error = "rank " + std::to_string(cause.rank) + " " +
                   (cause.reportedError.empty() ? describeExit(cause) + where
                                                : "failed" + where + ": " + cause.reportedError) +
                   ". The other ranks were stopped.";
  }
  // Under the sink's lock: a window on another thread may still draw the recording meanwhile.
  withRecording([&](trace::RunRecording& r) { finishOutputs(config, result, r); });
  return result;
}

}  // namespace shardscope
