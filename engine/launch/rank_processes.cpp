#include "engine/launch/rank_processes.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <utility>
#include <random>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "engine/comm/loopback_listener.h"
#include "engine/launch/rank_fork.h"

extern char** environ;

namespace shardscope::engine {

namespace {

// The rendezvous store, hosted here as torchrun's elastic agent hosts it (the ranks are told so
// with TORCHELASTIC_USE_AGENT_STORE). c10d's TCPStore would listen on every interface; it is handed
// a socket of ours instead (masterListenFd), bound to the loopback address only, on a port the
// kernel picks and that is held from the start: a port picked, released and then handed to rank 0
// could be taken in between by another run starting at the same moment.
LoopbackListener rendezvousListener() {
  try {
    return listenOnLoopback("127.0.0.1", 0);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("cannot host the ranks' rendezvous store on 127.0.0.1: ") + e.what() +
                             " (the ranks meet over the loopback interface; is it up?)");
  }
}

// The store, on the listener made before the ranks started (it starts a thread, and forked ranks
// are forked from a process with one: engine/launch/rank_fork.h). The ranks' first requests wait in the
// listener's backlog until then.
c10::intrusive_ptr<c10d::TCPStore> hostRendezvousStore(const LoopbackListener& listener) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>(listener.port);
  options.masterListenFd = listener.fd;  // the store owns it from here
  options.isServer = true;
  options.waitWorkers = false;  // the ranks' backends wait for each other through it
  options.timeout = std::chrono::seconds(120);
  try {
    return c10::make_intrusive<c10d::TCPStore>("127.0.0.1", options);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("cannot host the ranks' rendezvous store on 127.0.0.1: ") + e.what() +
                             " (the ranks meet over the loopback interface; is it up?)");
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

std::vector<std::string> rankEnvironment(const config::RunConfig& config, int rank, int port,
                                         const std::string& storePrefix, int eventFd, int gateFd) {
  std::vector<std::string> env;
  static const char* kOwned[] = {"RANK=",
                                 "WORLD_SIZE=",
                                 "LOCAL_RANK=",
                                 "LOCAL_WORLD_SIZE=",
                                 "MASTER_ADDR=",
                                 "MASTER_PORT=",
                                 "TORCHELASTIC_USE_AGENT_STORE=",
                                 "SHARDSCOPE_EVENT_FD=",
                                 "SHARDSCOPE_GATE_FD=",
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

// The configuration the ranks read, in an anonymous file in memory (memfd) that each rank opens as
// /dev/fd/N: no name on any disk, so a controller killed by SIGKILL or a double Ctrl-C leaves no
// shardscope-run-* file behind (as a file under $TMPDIR would). Close-on-exec here; each rank's child
// clears it for its own exec only. Returns the descriptor.
nlohmann::json rankConfigJson(const config::RunConfig& config) {
  auto json = config.toJson();
  json["export"] = config.exportDir;
  return json;
}

int writeConfigInMemory(const config::RunConfig& config) {
  const int fd = ::memfd_create("shardscope-run-config", MFD_CLOEXEC);
  if (fd < 0)
    throw std::runtime_error(std::string("cannot hold the ranks' configuration in memory: ") + std::strerror(errno));
  const std::string text = rankConfigJson(config).dump() + "\n";
  for (size_t at = 0; at < text.size();) {
    const ssize_t n = ::write(fd, text.data() + at, text.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno;
      ::close(fd);
      throw std::runtime_error(std::string("cannot write the ranks' configuration: ") + std::strerror(error));
    }
    at += static_cast<size_t>(n);
  }
  return fd;
}

// What a rank is started with.
struct RankLaunch {
  const config::RunConfig& config;
  const std::string& workerExecutable;
  int configFd;  // the memfd an exec'd rank reads (worker --config /dev/fd/N)
  int port;
  std::string storePrefix;
  const config::RunConfig* forkedConfig;  // what a forked rank runs (the memfd's, read back); null: exec
};

// Starts rank `r`'s process; returns it with our ends of its pipe and gate socket.
RankProcess startRank(const RankLaunch& launch, int r) {
  const config::RunConfig& config = launch.config;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("cannot open a pipe for rank ") + std::to_string(r) + ": " +
                             std::strerror(errno) + " (too many open files? raise ulimit -n)");
  }
  // 1 MiB (the most an unprivileged process may ask for, by default) where a pipe holds 64 KiB:
  // a few hundred milliseconds of a busy rank's events, for a controller that fell behind to catch
  // up before the rank's queue has to take them (engine/recording/catch_up_turns.h). Best effort.
  (void)::fcntl(fds[0], F_SETPIPE_SZ, 1 << 20);
  int gate[2] = {-1, -1};  // [0]: ours, [1]: the rank's
  if (config.stepGate != config::StepGateMode::Off && ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, gate) != 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error("socketpair failed: cannot give the ranks a step gate");
  }
  // Everything the child needs is built before fork: after fork only async-signal-safe calls.
  auto envStrings = rankEnvironment(config, r, launch.port, launch.storePrefix, fds[1], gate[1]);
  std::vector<char*> envp;
  for (auto& s : envStrings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string arg0 = "shardscope", arg1 = "worker", arg2 = "--config",
              arg3 = "/dev/fd/" + std::to_string(launch.configFd);
  char* argv[] = {arg0.data(), arg1.data(), arg2.data(), arg3.data(), nullptr};
  const pid_t parent = ::getpid();
  std::cout.flush();
  std::fflush(nullptr);  // what is buffered is printed by us, not by every rank again
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a rank never outlives its controller
    // A process group of its own: Ctrl-C in the terminal reaches the controller alone, which then
    // stops the ranks and writes what they recorded (instead of every rank dying mid-event).
    ::setpgid(0, 0);
    if (::getppid() != parent) ::_exit(1);
    if (launch.forkedConfig) runForkedRank(*launch.forkedConfig, envp.data(), {fds[1], gate[1]});
    ::fcntl(fds[1], F_SETFD, 0);  // the write end survives exec
    if (gate[1] >= 0) ::fcntl(gate[1], F_SETFD, 0);
    ::fcntl(launch.configFd, F_SETFD, 0);
    ::execve(launch.workerExecutable.c_str(), argv, envp.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  if (gate[1] >= 0) ::close(gate[1]);
  if (pid < 0) {
    ::close(fds[0]);
    if (gate[0] >= 0) ::close(gate[0]);
    throw std::runtime_error(std::string("cannot start rank ") + std::to_string(r) +
                             ": fork failed: " + std::strerror(errno));
  }
  RankProcess process;
  process.rank = r;
  process.pid = pid;
  process.eventFd = fds[0];
  process.gateFd = gate[0];
  return process;
}

// Closes our ends of a rank's pipe and socket.
void closeRankFds(RankProcess& p) {
  if (p.eventFd >= 0) ::close(p.eventFd);
  if (p.gateFd >= 0) ::close(p.gateFd);
  p.eventFd = p.gateFd = -1;
}
}  // namespace

LaunchedRanks::LaunchedRanks(const config::RunConfig& config, const std::string& workerExecutable) {
  configFd_ = writeConfigInMemory(config);
  LoopbackListener listener;
  try {
    listener = rendezvousListener();
    // A forked rank runs what an exec'd one would read from the memfd, read back the same way.
    config::RunConfig forked;
    const bool fork = mayForkRanks(config) && !config::applyConfigJson(rankConfigJson(config), forked);
    const RankLaunch launch{config,        workerExecutable,         configFd_,
                            listener.port, unguessableStorePrefix(), fork ? &forked : nullptr};
    ranks_.reserve(config.world);
    for (int r = 0; r < config.world; ++r) ranks_.push_back(startRank(launch, r));
    forked_ = fork;
    store_ = hostRendezvousStore(std::exchange(listener, LoopbackListener{}));
  } catch (...) {
    if (listener.fd >= 0) ::close(listener.fd);
    // Ranks already started would wait for their peers at the rendezvous until its timeout.
    signalRanks(ranks_, SIGKILL);
    for (auto& p : ranks_) {
      ::waitpid(p.pid, nullptr, 0);
      closeRankFds(p);
    }
    ::close(configFd_);
    throw;
  }
}

LaunchedRanks::~LaunchedRanks() {
  for (auto& p : ranks_) closeRankFds(p);
  store_.reset();
  ::close(configFd_);
}

void signalRanks(std::vector<RankProcess>& ranks, int signal) {
  for (auto& p : ranks) {
    if (p.exited) continue;
    ::kill(p.pid, signal);
    if (signal == SIGKILL) p.killedByController = true;  // counts only if SIGKILL is what ended it
  }
}

// A socket, not a pipe, so a rank that died meanwhile is an error to ignore here (MSG_NOSIGNAL),
// never a SIGPIPE.
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

bool wasKilledByController(const RankProcess& p) {
  return p.killedByController && WIFSIGNALED(p.waitStatus) && WTERMSIG(p.waitStatus) == SIGKILL;
}

bool hasPendingBytes(const RankProcess& p) {
  if (p.eventFd < 0) return false;
  pollfd fd{p.eventFd, POLLIN, 0};
  return ::poll(&fd, 1, 0) > 0 && (fd.revents & POLLIN);
}

std::string describeExit(const RankProcess& p) {
  if (wasKilledByController(p)) {
    return "was killed by shardscope (SIGKILL), as it had not stopped within " + std::to_string(kStopGraceSeconds) +
           " s of being asked to";
  }
  if (WIFSIGNALED(p.waitStatus)) {
    const int sig = WTERMSIG(p.waitStatus);
    return "died: killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "exited with status " + std::to_string(WEXITSTATUS(p.waitStatus));
}

bool rankFailed(const RankProcess& p) {
  return p.exited && (WIFSIGNALED(p.waitStatus) || WEXITSTATUS(p.waitStatus) != 0);
}

bool diedOfASignal(const RankProcess& p) {
  return p.exited && WIFSIGNALED(p.waitStatus) && WTERMSIG(p.waitStatus) != SIGTERM && !wasKilledByController(p);
}

int rootCause(const std::vector<RankProcess>& ranks, const std::vector<int>& failureOrder) {
  for (int r : failureOrder) {
    if (diedOfASignal(ranks[r])) return r;
  }
  for (int r : failureOrder) {
    const auto& e = ranks[r].reportedError;
    if (!e.empty() && e.find("onnection") == std::string::npos && e.find("peer") == std::string::npos &&
        e.find("Socket") == std::string::npos) {
      return r;
    }
  }
  return failureOrder.front();
}

}  // namespace shardscope::engine
