// A listening TCP socket on a loopback address, for c10d's TCPStore to take over (masterListenFd)
// instead of the socket it would open itself on every interface. Used where shardscope hosts a
// rendezvous store: the controller's for a local run, and rank 0's for a single-host job whose
// launcher leaves the store to it.
#pragma once

#include <optional>
#include <string>

namespace shardscope::engine {

struct LoopbackListener {
  int fd = -1;   // listening, close-on-exec; the store owns it once handed over
  int port = 0;  // the port it listens on (the kernel's pick when 0 was asked for)
};

// Whether `address` (numeric IPv4 or IPv6, or "localhost") is a loopback one; nothing when it is
// not an address at all (a host name, "127.0.0.1:29700").
std::optional<bool> isLoopbackAddress(const std::string& address);

// Listens on `address` (127.x or ::1) at `port` (0: any free one). Throws std::runtime_error with
// the system's reason; the caller says what it was for.
LoopbackListener listenOnLoopback(const std::string& address, int port);

}  // namespace shardscope::engine
