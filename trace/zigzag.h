// Signed values as the varints the wire (wire.h) and the memory samples (role_track.h) store:
// zigzagged so small negatives stay short, and differences taken in wrapping two's complement so
// a damaged frame's or an absurd file's values cannot overflow.
#pragma once

#include <cstdint>

namespace shardscope::trace {

inline uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
inline int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }
inline int64_t wrappingMinus(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
inline int64_t wrappingPlus(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

}  // namespace shardscope::trace
