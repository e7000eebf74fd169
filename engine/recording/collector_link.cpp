#include "engine/recording/collector_link.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace shardscope::engine {

std::optional<std::string> parseCollectorAddress(const std::string& text, std::string& host, int& port) {
  const size_t colon = text.rfind(':');
  std::string h = colon == std::string::npos ? "" : text.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  const std::string p = colon == std::string::npos ? "" : text.substr(colon + 1);
  const bool digits = !p.empty() && p.size() <= 5 && p.find_first_not_of("0123456789") == std::string::npos;
  if (h.empty() || !digits || std::stoi(p) < 1 || std::stoi(p) > 65535) {
    return "--collector '" + text +
           "' is not HOST:PORT (a port from 1 to 65535); e.g. --collector 10.0.0.1:29700, "
           "where 'shardscope listen --port 29700' runs";
  }
  host = h;
  port = std::stoi(p);
  return std::nullopt;
}

namespace {

// A connect that gives up after `timeoutMs` (an unreachable host would hold a blocking one for
// minutes); the socket is blocking again after it.
int connectWithin(const addrinfo& a, int timeoutMs, std::string& problem) {
  const int fd = ::socket(a.ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    problem = std::strerror(errno);
    return -1;
  }
  const int flags = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  int error = 0;
  if (::connect(fd, a.ai_addr, a.ai_addrlen) != 0) {
    error = errno;
    if (error == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      error = ::poll(&p, 1, timeoutMs) == 1 ? 0 : ETIMEDOUT;
      socklen_t length = sizeof error;
      if (error == 0) ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
    }
  }
  if (error != 0) {
    problem = std::strerror(error);
    ::close(fd);
    return -1;
  }
  ::fcntl(fd, F_SETFL, flags);
  return fd;
}

}  // namespace

// The collector's answer to the hello: "ok", or "refused: why"; "" when none came in time.
std::string readAnswer(int fd, int timeoutMs) {
  std::string answer;
  char c = 0;
  while (answer.size() < 1024) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, timeoutMs) != 1 || ::recv(fd, &c, 1, 0) != 1 || c == '\n') break;
    answer += c;
  }
  return answer;
}

int connectToCollector(const std::string& host, int port, const trace::CollectorHello& hello, std::string& problem,
                       int timeoutMs) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int resolved = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (resolved != 0 || !found) {
    problem = std::string("cannot resolve the host: ") + ::gai_strerror(resolved);
    return -1;
  }
  int fd = -1;
  for (const addrinfo* a = found; a && fd < 0; a = a->ai_next)
    fd = connectWithin(*a, timeoutMs, problem);  // localhost: ::1, then 127.0.0.1
  ::freeaddrinfo(found);
  if (fd < 0) return -1;
  const std::string line = trace::encodeCollectorHello(hello);
  if (::send(fd, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size())) {
    problem = std::string("the hello could not be sent: ") + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  const std::string answer = readAnswer(fd, timeoutMs);
  if (answer != "ok") {
    problem = answer.rfind("refused: ", 0) == 0
                  ? "it refused this rank: " + answer.substr(9)
                  : "it did not answer the hello within " + std::to_string(timeoutMs / 1000) + " s";
    ::close(fd);
    return -1;
  }
  // A collector that stops reading (stopped, hung) must not hold the rank's recorder: after 10 s
  // a send fails and the rank goes on in its file.
  timeval limit{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
  return fd;
}

}  // namespace shardscope::engine
