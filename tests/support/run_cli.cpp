#include "tests/support/run_cli.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace shardscope::testing {

CliResult runShardscope(const std::vector<std::string>& args, const std::vector<std::string>& env, int timeoutSeconds) {
  std::vector<std::string> argv = {SHARDSCOPE_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return runCommand(argv, env, timeoutSeconds);
}

std::vector<CliResult> runWorkerJob(const config::RunConfig& config, const std::vector<std::string>& extraArgs,
                                    const std::vector<std::vector<std::string>>& rankEnv,
                                    const std::vector<std::string>& env) {
  const std::string port = std::to_string(freeLoopbackPort());
  std::vector<std::string> args = {"worker"};
  for (const auto& option : optionsOf(config)) args.push_back(option);
  args.insert(args.end(), extraArgs.begin(), extraArgs.end());
  std::vector<CliResult> results(static_cast<size_t>(config.world));
  std::vector<std::thread> ranks;
  for (int r = 0; r < config.world; ++r) {
    std::vector<std::string> vars = {"RANK=" + std::to_string(r),
                                     "WORLD_SIZE=" + std::to_string(config.world),
                                     "LOCAL_RANK=" + std::to_string(r),
                                     "LOCAL_WORLD_SIZE=" + std::to_string(config.world),
                                     "MASTER_ADDR=127.0.0.1",
                                     "MASTER_PORT=" + port,
                                     "SHARDSCOPE_RENDEZVOUS_TIMEOUT_S=60"};
    vars.insert(vars.end(), env.begin(), env.end());
    if (static_cast<size_t>(r) < rankEnv.size()) vars.insert(vars.end(), rankEnv[r].begin(), rankEnv[r].end());
    ranks.emplace_back([&, r, vars] { results[static_cast<size_t>(r)] = runShardscope(args, vars, 120); });
  }
  for (auto& t : ranks) t.join();
  return results;
}

bool waitForLoopbackListener(int port, int seconds) {
  for (int i = 0; i < seconds * 10; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool up = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    if (up) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

namespace {

// Whether a loopback port can be bound now.
bool bindable(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return free;
}

// The lowest port the kernel hands out itself (the local end of a connection, a bind to port 0).
int ephemeralPortsFrom() {
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 32768;
  range >> low;
  return low;
}

}  // namespace

int freeLoopbackPort() {
  // Below the kernel's own range: the port is bound seconds from now (a rank's store, once it has
  // loaded LibTorch), and one of that range could meanwhile become the local end of any connection
  // another test opens; below it, only another bind can take it.
  const int below = ephemeralPortsFrom();
  static std::mt19937 random(std::random_device{}() ^ static_cast<unsigned>(::getpid()));
  for (int attempt = 0; below > 11000 && attempt < 100; ++attempt) {
    const int port = std::uniform_int_distribution<int>(10000, below - 1)(random);
    if (bindable(port)) return port;
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);  // none found: the kernel's pick
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &length);
  ::close(fd);
  return ntohs(a.sin_port);
}

config::RunConfig tinyGptConfig() {
  config::RunConfig c;
  c.model = config::ModelKind::Gpt;
  c.layers = 3;
  c.hidden = 20;
  c.heads = 4;
  c.vocab = 37;
  c.seq = 6;
  c.batch = 4;
  c.steps = 2;
  c.world = 2;
  return c;
}

std::vector<std::string> optionsOf(const config::RunConfig& config) {
  std::vector<std::string> out;
  const auto json = config.toJson();  // items() refers to it: it must outlive the loop
  for (const auto& [key, value] : json.items()) {
    if (value.is_string() && value.get<std::string>().empty()) continue;  // an option left out (--slow-rank)
    if (value.is_boolean()) {  // a switch takes its value after '=' (CLI11's flag)
      out.push_back("--" + key + "=" + value.dump());
      continue;
    }
    out.push_back("--" + key);
    out.push_back(value.is_string() ? value.get<std::string>() : value.dump());
  }
  return out;
}

std::vector<std::string> runArgsOf(const config::RunConfig& config, const std::vector<std::string>& extra) {
  std::vector<std::string> out = {"run"};
  for (auto& option : optionsOf(config)) out.push_back(std::move(option));
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

CliResult runCommand(const std::vector<std::string>& argvStrings, const std::vector<std::string>& env,
                     int timeoutSeconds) {
  int fds[2];
  if (::pipe(fds) != 0) return {};
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::close(fds[0]);
    ::close(fds[1]);
    for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
    std::vector<std::string> copy = argvStrings;
    std::vector<char*> argv;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  CliResult result;
  char buffer[4096];
  const auto deadline = start + std::chrono::seconds(timeoutSeconds);
  for (;;) {
    pollfd p{fds[0], POLLIN, 0};
    ::poll(&p, 1, 200);
    if (p.revents) {
      ssize_t n = ::read(fds[0], buffer, sizeof(buffer));
      if (n <= 0) break;
      result.output.append(buffer, static_cast<size_t>(n));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      result.output += "\n[test harness: timed out after " + std::to_string(timeoutSeconds) + " s]";
      break;
    }
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

std::string freshTempDir(const std::string& name) {
  // A new directory per call (mkdtemp), never a cleaned old one: std::filesystem::remove_all is
  // one of the std::filesystem functions libtorch.so exports from its own older libstdc++, and
  // that copy crashes (a call through a null pointer) on a non-empty directory. A directory left
  // by an earlier run whose process had the same pid used to trip it.
  const char* base = std::getenv("TMPDIR");
  if (base == nullptr || *base == '\0') base = "/tmp";
  std::string pattern = std::string(base) + "/shardscope-test-" + std::to_string(::getpid()) + "-" + name + "-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error("cannot create a temporary directory from " + pattern + ": " + std::strerror(errno));
  }
  return pattern;
}

std::string fileContents(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace shardscope::testing
