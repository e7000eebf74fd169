#include "engine/recording/unconfirmed_bytes.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "trace/wire.h"

namespace shardscope::engine {

void UnconfirmedBytes::sent(const char* data, size_t size, Clock::time_point at) {
  bytes_.append(data, size);
  sends_.emplace_back(start_ + bytes_.size(), at);
  if (bytes_.size() <= kMaxBytes) return;
  // Give up the older half, at an item's start so what is left can still be read as items.
  const size_t cut = trace::itemBoundaryFrom(bytes_, bytes_.size() / 2);
  const size_t drop = cut == std::string::npos ? bytes_.size() : cut;
  givenUp_ += drop;
  forgetThrough(start_ + drop);
}

bool UnconfirmedBytes::readConfirmations(int fd) {
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n > 0) {
      takeConfirmations(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);  // nothing more waiting: still open
  }
}

void UnconfirmedBytes::takeConfirmations(const char* text, size_t size) {
  partial_.append(text, size);
  size_t begin = 0;
  for (size_t end; (end = partial_.find('\n', begin)) != std::string::npos; begin = end + 1) {
    const std::string line = partial_.substr(begin, end - begin);
    if (line.rfind("ack ", 0) != 0) continue;
    char* stop = nullptr;
    const unsigned long long offset = std::strtoull(line.c_str() + 4, &stop, 10);
    if (stop && *stop == '\0') forgetThrough(offset);
  }
  partial_.erase(0, begin);
  if (partial_.size() > 256) partial_.clear();  // not a confirmation: nothing a collector sends
}

void UnconfirmedBytes::forgetThrough(uint64_t offset) {
  if (offset <= start_) return;
  const uint64_t drop = std::min<uint64_t>(offset - start_, bytes_.size());
  bytes_.erase(0, static_cast<size_t>(drop));
  start_ += drop;
  while (!sends_.empty() && sends_.front().first <= start_) sends_.pop_front();
}

UnconfirmedBytes::Clock::duration UnconfirmedBytes::oldestWait(Clock::time_point now) const {
  return bytes_.empty() || sends_.empty() ? Clock::duration::zero() : now - sends_.front().second;
}

}  // namespace shardscope::engine
