// What a rank has sent its collector that the collector has not yet said is on its disk. The
// collector answers on the connection with "ack N\n" once the rank's stream up to byte N (whole
// items, trace/wire.h) is written and flushed to its file. When the collector is lost, the rank writes these
// bytes first into its own file, so nothing the collector did not keep is lost with it (events in
// the sockets, in its receive buffer); what it kept but had not yet confirmed then appears in both
// files, and the merge drops the repeat (trace/rank_event_files.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>

namespace shardscope::engine {

class UnconfirmedBytes {
 public:
  // Past this many unconfirmed bytes (a collector that stopped confirming) the oldest whole items
  // are given up: they can no longer be written again if the collector is lost.
  static constexpr size_t kMaxBytes = size_t{64} << 20;

  using Clock = std::chrono::steady_clock;

  void sent(const char* data, size_t size, Clock::time_point at = Clock::now());
  // Reads the confirmations waiting on `fd` without blocking, and forgets what they cover; false
  // once the collector has closed the connection (or it failed).
  bool readConfirmations(int fd);
  // Takes "ack N" lines from `text` (as read from the connection, in pieces).
  void takeConfirmations(const char* text, size_t size);

  // The stream from the last confirmed item on (an item's start), and where in the stream it starts.
  const std::string& bytes() const { return bytes_; }
  uint64_t startOffset() const { return start_; }
  // How long the oldest unconfirmed byte has waited (zero when all is confirmed): a collector that
  // confirms nothing for long is gone, even while sends still succeed into the socket's buffer.
  Clock::duration oldestWait(Clock::time_point now = Clock::now()) const;
  uint64_t sentTotal() const { return start_ + bytes_.size(); }
  uint64_t givenUp() const { return givenUp_; }

 private:
  void forgetThrough(uint64_t offset);

  std::string bytes_;  // the stream from offset start_
  uint64_t start_ = 0;
  uint64_t givenUp_ = 0;                                      // bytes dropped unconfirmed (kMaxBytes)
  std::string partial_;                                       // a confirmation line not yet ended
  std::deque<std::pair<uint64_t, Clock::time_point>> sends_;  // each send's end offset, and when
};

}  // namespace shardscope::engine
