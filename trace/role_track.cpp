#include "trace/role_track.h"

#include <cstring>

namespace shardscope::trace {

namespace {

template <class T>
void append(std::vector<uint8_t>& to, const T& value) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(&value);
  to.insert(to.end(), bytes, bytes + sizeof value);
}

}  // namespace

void RoleTrack::push(int64_t tNs, const RoleBytes& bytes) {
  if ((times_.size() + lead_) % kBlock == 0) {
    blockStart_.push_back(blocks_.size());
    append(blocks_, bytes);
  } else {
    const size_t countAt = blocks_.size();
    blocks_.push_back(0);
    for (int role = 0; role < kMemoryRoleCount; ++role) {
      if (bytes[role] == current_[role]) continue;
      ++blocks_[countAt];
      blocks_.push_back(static_cast<uint8_t>(role));
      append(blocks_, bytes[role]);
    }
  }
  times_.push(tNs);
  current_ = bytes;
}

RoleBytes RoleTrack::bytes(size_t sample) const {
  const size_t i = sample + lead_;
  const uint8_t* p = blocks_.data() + blockStart_[i / kBlock];
  RoleBytes out;
  std::memcpy(out.data(), p, sizeof out);
  p += sizeof out;
  for (size_t sample = i / kBlock * kBlock; sample < i; ++sample) {
    const uint8_t changes = *p++;
    for (uint8_t c = 0; c < changes; ++c) {
      const uint8_t role = *p++;
      std::memcpy(&out[role], p, sizeof(int64_t));
      p += sizeof(int64_t);
    }
  }
  return out;
}

void RoleTrack::prefetch(size_t i) const {
  const uint8_t* block = blocks_.data() + blockStart_[(i + lead_) / kBlock];
  // The snapshot and the first changes: three lines cover a block with a change a sample.
  for (int line = 0; line < 4; ++line) __builtin_prefetch(block + 64 * line);
}

RoleBytes RoleTrack::bytesAt(double tNs) const {
  const size_t count = countAtOrBefore(tNs);
  return count == 0 ? RoleBytes{} : bytes(count - 1);
}

RoleTrack RoleTrack::takeFront(size_t count) {
  count = std::min(count, size());
  RoleTrack front;
  for (size_t i = 0; i < count; ++i) front.push(time(i), bytes(i));
  // The whole blocks before the first sample kept go; its own block stays, led by those taken.
  const size_t wholeBlocks = (count + lead_) / kBlock;
  const uint64_t cut = wholeBlocks < blockStart_.size() ? blockStart_[wholeBlocks] : blocks_.size();
  blocks_.erase(blocks_.begin(), blocks_.begin() + static_cast<std::ptrdiff_t>(cut));
  blockStart_.erase(blockStart_.begin(), blockStart_.begin() + static_cast<std::ptrdiff_t>(wholeBlocks));
  for (auto& start : blockStart_) start -= cut;
  lead_ = (count + lead_) % kBlock;
  times_.dropFront(count);
  return front;  // current_ stays: what is held now, even when every sample went to the front
}

}  // namespace shardscope::trace
