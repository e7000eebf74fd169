// A rank's link to a collector (`shardscope worker --collector HOST:PORT`): a TCP connection that
// starts with the rank's hello (trace/collector_hello.h) and then carries the rank's event frames,
// written by its recorder as they would go to a controller's pipe.
#pragma once

#include <optional>
#include <string>

#include "trace/collector_hello.h"

namespace shardscope::engine {

// "HOST:PORT" or "[V6]:PORT" into its parts; an error naming the value and the form otherwise.
std::optional<std::string> parseCollectorAddress(const std::string& text, std::string& host, int& port);

// Connects (within `timeoutMs`) and sends the hello; the connected socket, or -1 with `problem`.
int connectToCollector(const std::string& host, int port, const trace::CollectorHello& hello, std::string& problem,
                       int timeoutMs = 5000);

}  // namespace shardscope::engine
