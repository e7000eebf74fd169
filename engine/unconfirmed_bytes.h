// What a rank has sent its collector that the collector has not yet said is on its disk. The
// collector answers on the connection with "ack N\n" once the rank's stream up to byte N (whole
// lines) is written and flushed to its file. When the collector is lost, the rank writes these
// bytes first into its own file, so nothing the collector did not keep is lost with it (events in
// the sockets, in its receive buffer); what it kept but had not yet confirmed then appears in both
// files, and the merge drops the repeat (trace/rank_event_files.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace shardscope {

class UnconfirmedBytes {
 public:
  // Past this many unconfirmed bytes (a collector that stopped confirming) the oldest whole lines
  // are given up: they can no longer be written again if the collector is lost.
  static constexpr size_t kMaxBytes = size_t{64} << 20;

  void sent(const char* data, size_t size);
  // Reads the confirmations waiting on `fd` without blocking, and forgets what they cover.
  void readConfirmations(int fd);
  // Takes "ack N" lines from `text` (as read from the connection, in pieces).
  void takeConfirmations(const char* text, size_t size);

  // The stream from the last confirmed line on (a line's start).
  const std::string& bytes() const { return bytes_; }
  uint64_t sentTotal() const { return start_ + bytes_.size(); }
  uint64_t givenUp() const { return givenUp_; }

 private:
  void forgetThrough(uint64_t offset);

  std::string bytes_;    // the stream from offset start_
  uint64_t start_ = 0;
  uint64_t givenUp_ = 0;  // bytes dropped unconfirmed (kMaxBytes)
  std::string partial_;   // a confirmation line not yet ended
};

}  // namespace shardscope
