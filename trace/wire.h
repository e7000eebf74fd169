// Wire format between a rank process and the controller: one JSON object per line on a pipe.
// Lines keep the stream self-delimiting, so whatever a rank wrote before dying is still readable.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "trace/events.h"

namespace shardscope::trace {

std::string encodeEventLine(const Event& event);  // ends with '\n'

// Returns nothing for a line that is not a well-formed event (a torn last line of a killed rank).
std::optional<Event> decodeEventLine(std::string_view line);

// Splits a byte stream into lines across reads; keeps the unfinished tail for the next feed.
class LineSplitter {
 public:
  template <typename Fn>
  void feed(const char* data, size_t size, Fn&& onLine) {
    pending_.append(data, size);
    size_t start = 0;
    for (size_t nl; (nl = pending_.find('\n', start)) != std::string::npos; start = nl + 1) {
      onLine(std::string_view(pending_).substr(start, nl - start));  // no copy per line
    }
    pending_.erase(0, start);
  }

  size_t pendingBytes() const { return pending_.size(); }  // an unfinished line so far

 private:
  std::string pending_;
};

}  // namespace shardscope::trace
