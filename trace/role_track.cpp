#include "trace/role_track.h"

#include "trace/zigzag.h"

namespace shardscope::trace {

namespace {

// Varints of zigzagged values: a role's bytes or a change of them, mostly under 4 MB, in 1 to 4
// bytes where an int64 takes 8. Wrapping arithmetic: a file's absurd sizes come back as they went in.

void putVarint(std::vector<uint8_t>& to, uint64_t v) {
  while (v > 0x7f) {
    to.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  to.push_back(static_cast<uint8_t>(v));
}

uint64_t getVarint(const uint8_t*& p) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    const uint8_t byte = *p++;
    v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if (byte < 0x80) return v;
  }
}

// A sample's header byte: kOneChange | role when one role changed (nearly every sample), else the
// count of changed roles, each then led by its role byte.
constexpr uint8_t kOneChange = 0x80;

}  // namespace

void RoleTrack::push(int64_t tNs, const RoleBytes& bytes) {
  if ((times_.size() + lead_) % kBlock == 0) {
    blockStart_.push_back(blocks_.size());
    for (int role = 0; role < kMemoryRoleCount; ++role) putVarint(blocks_, zigzag(bytes[role]));
  } else {
    uint8_t changed = 0;
    int onlyRole = 0;
    for (int role = 0; role < kMemoryRoleCount; ++role) {
      if (bytes[role] == current_[role]) continue;
      ++changed;
      onlyRole = role;
    }
    if (changed == 1) {
      blocks_.push_back(static_cast<uint8_t>(kOneChange | onlyRole));
      putVarint(blocks_, zigzag(wrappingMinus(bytes[onlyRole], current_[onlyRole])));
    } else {
      blocks_.push_back(changed);
      for (int role = 0; role < kMemoryRoleCount; ++role) {
        if (bytes[role] == current_[role]) continue;
        blocks_.push_back(static_cast<uint8_t>(role));
        putVarint(blocks_, zigzag(wrappingMinus(bytes[role], current_[role])));
      }
    }
  }
  times_.push(tNs);
  current_ = bytes;
}

RoleBytes RoleTrack::bytes(size_t sample) const {
  const size_t i = sample + lead_;
  const uint8_t* p = blocks_.data() + blockStart_[i / kBlock];
  RoleBytes out;
  for (int role = 0; role < kMemoryRoleCount; ++role) out[role] = unzigzag(getVarint(p));
  for (size_t sample = i / kBlock * kBlock; sample < i; ++sample) {
    const uint8_t header = *p++;
    if (header & kOneChange) {
      const int role = header & ~kOneChange;
      out[role] = wrappingPlus(out[role], unzigzag(getVarint(p)));
      continue;
    }
    for (uint8_t c = 0; c < header; ++c) {
      const uint8_t role = *p++;
      out[role] = wrappingPlus(out[role], unzigzag(getVarint(p)));
    }
  }
  return out;
}

void RoleTrack::prefetch(size_t i) const {
  const uint8_t* block = blocks_.data() + blockStart_[(i + lead_) / kBlock];
  // The snapshot and its changes: two lines cover a block of one change a sample.
  for (int line = 0; line < 2; ++line) __builtin_prefetch(block + 64 * line);
}

RoleBytes RoleTrack::bytesAt(double tNs) const {
  const size_t count = countAtOrBefore(tNs);
  return count == 0 ? RoleBytes{} : bytes(count - 1);
}

RoleTrack RoleTrack::takeFront(size_t count) {
  count = std::min(count, size());
  // The whole blocks before the first sample kept go to the front as they are (no sample decoded
  // again); the samples taken from the block that stays are pushed one by one after them.
  const size_t wholeBlocks = (count + lead_) / kBlock;
  const uint64_t cut = wholeBlocks < blockStart_.size() ? blockStart_[wholeBlocks] : blocks_.size();
  RoleTrack front;
  front.blocks_.assign(blocks_.begin(), blocks_.begin() + static_cast<std::ptrdiff_t>(cut));
  front.blockStart_.assign(blockStart_.begin(), blockStart_.begin() + static_cast<std::ptrdiff_t>(wholeBlocks));
  front.lead_ = wholeBlocks > 0 ? lead_ : 0;  // with none, its samples start a block of their own
  const size_t inWholeBlocks = std::min(count, wholeBlocks * kBlock - std::min(lead_, wholeBlocks * kBlock));
  for (size_t i = 0; i < inWholeBlocks; ++i) front.times_.push(time(i));
  if (inWholeBlocks > 0) front.current_ = bytes(inWholeBlocks - 1);
  for (size_t i = inWholeBlocks; i < count; ++i) front.push(time(i), bytes(i));
  blocks_.erase(blocks_.begin(), blocks_.begin() + static_cast<std::ptrdiff_t>(cut));
  blockStart_.erase(blockStart_.begin(), blockStart_.begin() + static_cast<std::ptrdiff_t>(wholeBlocks));
  for (auto& start : blockStart_) start -= cut;
  lead_ = (count + lead_) % kBlock;
  times_.dropFront(count);
  return front;  // current_ stays: what is held now, even when every sample went to the front
}

}  // namespace shardscope::trace
