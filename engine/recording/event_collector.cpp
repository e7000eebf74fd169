#include "engine/recording/event_collector.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "engine/comm/loopback_listener.h"
#include "files/output_file.h"
#include "trace/collector_hello.h"
#include "trace/rank_event_files.h"
#include "trace/wire.h"

namespace shardscope::engine {

namespace {

using Clock = std::chrono::steady_clock;

// An event is under 1 KiB; a frame at most this, with its mark and length.
constexpr size_t kMaxItemBytes = trace::kMaxFrameBytes + 8;
constexpr size_t kMaxHelloBytes = 64 * 1024;   // a hello is a few hundred bytes; rank 0's config a few KiB
constexpr size_t kMaxWaitingHellos = 64;       // connections not yet past their hello
constexpr uint64_t kConfirmBytes = 64 * 1024;  // "ack N" at least this often in bytes ...
constexpr auto kConfirmInterval = std::chrono::milliseconds(100);  // ... or in time
// A rank says it is alive every second (an empty line); silence this long means its host or the
// link is gone. And once every rank that came has gone, how long to wait for the ones that never
// did. 30 s, or SHARDSCOPE_COLLECTOR_WAIT_S (a test shortens it).
std::chrono::seconds collectorWait() {
  static const auto wait = [] {
    const char* text = std::getenv("SHARDSCOPE_COLLECTOR_WAIT_S");
    const long seconds = text ? std::atol(text) : 0;
    return std::chrono::seconds(seconds > 0 && seconds <= 3600 ? seconds : 30);
  }();
  return wait;
}

// Tells a connecting rank whether it is in ("ok") or why not, so a refused rank knows.
void answer(int fd, const std::string& line) {
  (void)::send(fd, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

std::string peerOf(int fd) {
  sockaddr_storage peer{};
  socklen_t length = sizeof peer;
  char text[INET6_ADDRSTRLEN] = "?";
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &length) == 0) {
    const void* address = peer.ss_family == AF_INET6
                              ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&peer)->sin6_addr)
                              : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&peer)->sin_addr);
    ::inet_ntop(peer.ss_family, address, text, sizeof text);
  }
  return text;
}

// Compares without stopping at the first difference: how long a refusal takes says nothing of
// how much of a guessed token was right.
bool sameToken(const std::string& given, const std::string& expected) {
  unsigned char differ = given.size() != expected.size() ? 1 : 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    differ |= static_cast<unsigned char>((i < given.size() ? given[i] : 0) ^ expected[i]);
  }
  return differ == 0;
}

struct Connection {
  int fd = -1;
  std::string peer;
  Clock::time_point acceptedAt;
  Clock::time_point heardAt;  // its last bytes
  std::string pending;        // bytes before the hello's end
  int rank = -1;              // once its hello is taken
  std::ofstream file;         // DIR/rank-R.events
  trace::StreamSplitter items;
  int steps = 0;
  uint64_t received = 0;   // bytes of its stream after the hello, written and flushed
  uint64_t confirmed = 0;  // how far "ack N" has told it (engine/recording/unconfirmed_bytes.h)
  Clock::time_point confirmedAt;
  bool finished = false;     // it sent RunDone
  std::string error;         // its RankError
  bool writeFailed = false;  // its file stopped taking the stream (said once)
};

class Collector {
 public:
  Collector(const CollectorOptions& options, CollectorSink* sink) : options_(options), sink_(sink) {}

  int run(const std::function<bool()>& shouldStop) {
    std::error_code made;
    std::filesystem::create_directories(options_.dir, made);
    if (!std::ofstream(trace::rankEventConfigName(options_.dir) + ".probe")) {
      std::fprintf(stderr, "shardscope listen: cannot write in --trace-dir '%s'%s; give it a directory you can write\n",
                   options_.dir.c_str(), made ? (": " + made.message()).c_str() : "");
      return 2;
    }
    std::filesystem::remove(trace::rankEventConfigName(options_.dir) + ".probe", made);
    LoopbackListener listener;
    try {
      listener = listenOnLoopback(options_.bindAddress, options_.port);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "shardscope listen: cannot listen on %s:%d: %s; choose another --port\n",
                   options_.bindAddress.c_str(), options_.port, e.what());
      return 2;
    }
    std::printf("listening on %s:%d%s; each rank's events go to %s\n", options_.bindAddress.c_str(), listener.port,
                options_.token.empty() ? "" : " (ranks must present the token)", options_.dir.c_str());
    std::fflush(stdout);
    while (!allGone()) {
      if (shouldStop()) {
        std::printf("stopped: what the ranks sent so far is in %s\n", options_.dir.c_str());
        stopped_ = true;
        break;
      }
      poll(listener.fd);
    }
    ::close(listener.fd);
    for (auto& c : connections_) closeConnection(*c, "the collector stopped");
    return stopped_ || failed_ ? 1 : 0;
  }

 private:
  // Every rank of the job connected and went; or every rank that came went, and the rest have not
  // come for collectorWait() (they fell back to their files, or died first): said, not waited for.
  bool allGone() {
    if (world_ == 0 || !connections_.empty()) return false;
    if (static_cast<int>(ended_.size()) == world_) return true;
    if (static_cast<int>(ended_.size()) != static_cast<int>(seen_.size())) return false;
    if (Clock::now() - lastEnded_ < collectorWait()) return false;
    std::string missing;
    for (int r = 0; r < world_; ++r) {
      if (!seen_.count(r)) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    }
    std::printf("rank %s never connected (within %lld s of the last rank's end); ending\n", missing.c_str(),
                static_cast<long long>(collectorWait().count()));
    failed_ = true;
    return true;
  }

  void poll(int listenFd) {
    std::vector<pollfd> fds{{listenFd, POLLIN, 0}};
    for (const auto& c : connections_) fds.push_back({c->fd, POLLIN, 0});
    ::poll(fds.data(), fds.size(), 100);
    if (fds[0].revents & POLLIN) accept(listenFd);
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) read(*connections_[i - 1]);
    }
    const auto now = Clock::now();
    for (auto& c : connections_) {
      if (c->rank < 0 && c->fd >= 0 && now - c->acceptedAt > std::chrono::milliseconds(options_.helloTimeoutMs)) {
        refuse(*c, "it said nothing for " + std::to_string(options_.helloTimeoutMs / 1000) + " s");
      }
      // What came since the last confirmation, confirmed once it is 100 ms old even if nothing
      // follows it (a rank waits for its last lines to be confirmed as it ends).
      if (c->rank >= 0 && c->fd >= 0) confirm(*c);
      if (c->rank >= 0 && c->fd >= 0 && now - c->heardAt > collectorWait()) {
        closeConnection(*c, "it sent nothing for " + std::to_string(collectorWait().count()) +
                                " s, not even its heartbeat (its host or the link is gone, or it is stopped)");
      }
    }
    connections_.erase(
        std::remove_if(connections_.begin(), connections_.end(), [](const auto& c) { return c->fd < 0; }),
        connections_.end());
  }

  void accept(int listenFd) {
    const int fd = ::accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      // Out of descriptors: let the waiting ones go (refused by their timeout) rather than spin.
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      return;
    }
    auto c = std::make_unique<Connection>();
    c->fd = fd;
    c->peer = peerOf(fd);
    c->acceptedAt = c->heardAt = Clock::now();
    // Full of connections that said nothing: the oldest of them goes, not the newcomer. Refusing
    // newcomers let 64 idle connections keep every real rank out until they timed out; a rank
    // says its hello at once, so the newest connection is the likeliest to be one.
    std::vector<Connection*> waiting;
    for (const auto& o : connections_) {
      if (o->rank < 0 && o->fd >= 0) waiting.push_back(o.get());
    }
    if (waiting.size() >= kMaxWaitingHellos) {
      Connection* oldest =
          *std::min_element(waiting.begin(), waiting.end(),
                            [](const Connection* a, const Connection* b) { return a->acceptedAt < b->acceptedAt; });
      refuse(*oldest, "it had said no hello when " + std::to_string(kMaxWaitingHellos) +
                          " connections waited and another came (the oldest silent one makes room)");
    }
    connections_.push_back(std::move(c));
  }

  void read(Connection& c) {
    char buffer[65536];
    const ssize_t n = ::recv(c.fd, buffer, sizeof buffer, 0);
    if (n <= 0) {
      if (c.rank < 0)
        refuse(c, "it closed before its hello");
      else
        closeConnection(c, "");
      return;
    }
    c.heardAt = Clock::now();
    if (c.rank < 0) {
      c.pending.append(buffer, static_cast<size_t>(n));
      const size_t end = c.pending.find('\n');
      if (end == std::string::npos) {
        if (c.pending.size() > kMaxHelloBytes) refuse(c, "its first 64 KiB hold no line");
        return;
      }
      if (!takeHello(c, c.pending.substr(0, end))) return;
      const std::string rest = c.pending.substr(end + 1);
      c.pending.clear();
      take(c, rest.data(), rest.size());
      return;
    }
    take(c, buffer, static_cast<size_t>(n));
  }

  bool takeHello(Connection& c, const std::string& line) {
    std::string why;
    const auto hello = trace::decodeCollectorHello(line, why);
    if (!hello) return refuse(c, why);
    if (!options_.token.empty() && !sameToken(hello->token, options_.token)) {
      return refuse(c, hello->token.empty() ? "it presented no token" : "it presented a wrong token");
    }
    if (world_ > 0 && hello->world != world_) {
      return refuse(c, "it says the world is " + std::to_string(hello->world) + ", not " + std::to_string(world_));
    }
    if (seen_.count(hello->rank)) return refuse(c, "rank " + std::to_string(hello->rank) + " is already here");
    c.file.open(trace::rankEventFileName(options_.dir, hello->rank), std::ios::binary | std::ios::trunc);
    if (!c.file)
      return refuse(c, "its file " + trace::rankEventFileName(options_.dir, hello->rank) + " cannot be written");
    world_ = hello->world;
    seen_.insert(hello->rank);
    c.rank = hello->rank;
    answer(c.fd, "ok\n");
    if (!hello->configJson.empty()) {
      if (auto error = files::writeOutputFile(trace::rankEventConfigName(options_.dir),
                                              [&](std::ostream& out) { out << hello->configJson << "\n"; })) {
        std::fprintf(stderr, "shardscope listen: %s\n", error->c_str());
        failed_ = true;  // an output not written: exit 1, as run's
      }
    }
    if (sink_) sink_->rankJoined(c.rank, world_, hello->configJson, c.peer);
    std::printf("rank %d of %d connected from %s\n", c.rank, world_, c.peer.c_str());
    std::fflush(stdout);
    return true;
  }

  // A rank's bytes: kept as they came (the file is the rank's stream; flushed at once, so what was
  // received is on disk even if the collector is killed), and read for the terminal.
  void take(Connection& c, const char* data, size_t size) {
    c.file.write(data, static_cast<std::streamsize>(size));
    c.file.flush();
    if (!c.file) noteWriteFailure(c);
    c.received += size;
    std::vector<trace::Event> decoded;
    c.items.feed(data, size, [&](std::string_view item) {
      auto e = trace::decodeStreamItem(item);
      if (!e || e->rank != c.rank) return;
      if (e->kind == trace::EventKind::StepEnd) {
        ++c.steps;
        if (c.rank == 0) std::printf("step %d  loss %.6f\n", e->step + 1, e->loss);
      }
      if (e->kind == trace::EventKind::RunDone) c.finished = true;
      if (e->kind == trace::EventKind::RankError) c.error = e->text;
      if (sink_) decoded.push_back(std::move(*e));
    });
    if (c.items.pendingBytes() > kMaxItemBytes) {
      closeConnection(c, "it sent more than 1 MiB without ending a line or a frame");
      return;
    }
    if (sink_ && !decoded.empty()) sink_->rankEvents(c.rank, decoded);
    std::fflush(stdout);
    confirm(c);
  }

  // A rank's file that stopped taking its stream (a full disk): said once, and the job then ends 1,
  // as an output not written does. Nothing more is confirmed to the rank (confirm()).
  void noteWriteFailure(Connection& c) {
    if (c.writeFailed) return;
    const int err = errno;
    c.writeFailed = true;
    failed_ = true;
    std::fprintf(stderr,
                 "shardscope listen: cannot write %s%s: rank %d's events from here on are not in it. Free space "
                 "there, or give --trace-dir a directory that has it.\n",
                 trace::rankEventFileName(options_.dir, c.rank).c_str(),
                 err != 0 ? (std::string(" (") + std::strerror(err) + ")").c_str() : "", c.rank);
  }

  // Tells the rank how much of its stream is written to its file (flushed to the OS), up to its
  // last whole item, every 64 KiB or 100 ms: what it must write again itself if this collector
  // goes (engine/recording/unconfirmed_bytes.h).
  void confirm(Connection& c) {
    if (!c.file) return;  // not written: nothing to confirm
    const uint64_t kept = c.received - c.items.pendingBytes();
    const auto now = Clock::now();
    if (kept == c.confirmed || (kept - c.confirmed < kConfirmBytes && now - c.confirmedAt < kConfirmInterval)) return;
    answer(c.fd, "ack " + std::to_string(kept) + "\n");
    c.confirmed = kept;
    c.confirmedAt = now;
  }

  void closeConnection(Connection& c, const std::string& why) {
    if (c.fd < 0) return;
    ::close(c.fd);
    c.fd = -1;
    if (c.rank < 0) return;
    c.file.close();
    ended_.insert(c.rank);
    lastEnded_ = Clock::now();
    if (c.finished) {
      std::printf("rank %d finished (%d steps)\n", c.rank, c.steps);
      if (sink_) sink_->rankEnded(c.rank, true, "finished");
    } else {
      failed_ = true;
      const std::string how = !c.error.empty() ? "failed: " + c.error
                              : !why.empty()   ? "was cut off: " + why
                                               : "went without finishing (killed, or its host or link lost)";
      std::printf("rank %d (%s) %s, after %d steps\n", c.rank, c.peer.c_str(), how.c_str(), c.steps);
      if (sink_) sink_->rankEnded(c.rank, false, "rank " + std::to_string(c.rank) + " " + how);
    }
    std::fflush(stdout);
  }

  bool refuse(Connection& c, const std::string& why) {
    std::fprintf(stderr, "shardscope listen: refused a connection from %s: %s\n", c.peer.c_str(), why.c_str());
    answer(c.fd, "refused: " + why + "\n");
    ::close(c.fd);
    c.fd = -1;
    return false;
  }

  CollectorOptions options_;
  CollectorSink* sink_;
  std::vector<std::unique_ptr<Connection>> connections_;
  std::set<int> seen_, ended_;
  int world_ = 0;
  bool failed_ = false, stopped_ = false;
  Clock::time_point lastEnded_;
};

}  // namespace

std::optional<std::string> checkCollectorOptions(const CollectorOptions& options) {
  if (options.dir.empty()) {
    return std::string("listen needs --trace-dir DIR: where each rank's events are written, for 'shardscope view DIR'");
  }
  // Parsed, not matched as text: whether it is a loopback address decides whether a token is needed.
  const auto loopback = isLoopbackAddress(options.bindAddress);
  if (!loopback) {
    return "--bind '" + options.bindAddress +
           "' is not an IP address: give the numeric address of the interface "
           "to listen on (e.g. --bind 10.0.0.9, or 0.0.0.0 for all), and the port with --port";
  }
  if (!*loopback && options.token.empty()) {
    return "--bind " + options.bindAddress +
           " lets other hosts in, so the ranks must prove they belong to the job: "
           "give a token in SHARDSCOPE_COLLECTOR_TOKEN or --token-file FILE, and the same to every rank "
           "(SHARDSCOPE_COLLECTOR_TOKEN in the job's environment)";
  }
  if (options.port < 1 || options.port > 65535) {
    return "--port " + std::to_string(options.port) + " is not a port from 1 to 65535";
  }
  return std::nullopt;
}

int runCollector(const CollectorOptions& options, const std::function<bool()>& shouldStop, CollectorSink* sink) {
  try {
    return Collector(options, sink).run(shouldStop);
  } catch (const std::exception& e) {  // never a crash of the app's window around it
    std::fprintf(stderr, "shardscope listen: stopped by an error: %s\n", e.what());
    return 1;
  }
}

}  // namespace shardscope::engine
