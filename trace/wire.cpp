#include "trace/wire.h"

#include <cstring>
#include <limits>
#include <utility>

#include "trace/zigzag.h"

namespace shardscope::trace {

namespace {

// The payload's fields, by their bit in its mask: the ones most events carry first, so a memory
// event's or a span's mask is two bytes.
enum Field : uint32_t {
  kRank,
  kStep,
  kBegin,
  kEnd,  // as endNs - beginNs
  kBytes,
  kRole,
  kUnit,
  kOp,
  kPhase,
  kText,
  kIssue,  // as beginNs - issueNs
  kBytesOut,
  kWorldSize,
  kLegacyCount,  // written before each kind's figure had a field of its own (wire.h's legacy count)
  kMicroBatch,
  kFromRole,
  kSpace,
  kProcessGroup,
  kPaused,
  kLoss,
  kOwnPartBytes,
  kSequence,
  kParameterCount,
  kDeviceMemoryBytes,
  kPeakFlops,
  kDroppedEvents,
  kUncertainty,
  kPeer,
  kFieldCount,
};

constexpr int kLastEventKind = static_cast<int>(EventKind::CollectiveFailed);

void appendVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>(static_cast<uint8_t>(v) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

// Differences of times in two's complement, wrapping: a damaged frame's cannot overflow.
int64_t minus(int64_t a, int64_t b) { return wrappingMinus(a, b); }
int64_t plus(int64_t a, int64_t b) { return wrappingPlus(a, b); }

uint64_t lossBits(double loss) {
  uint64_t bits = 0;
  std::memcpy(&bits, &loss, sizeof bits);
  return bits;
}

// The fields that differ from a default Event, and the values that go on the wire for them.
struct Present {
  uint32_t mask = 0;
  int64_t values[kFieldCount] = {};
  void set(Field f, int64_t v) {
    mask |= 1u << f;
    values[f] = v;
  }
};

Present presentFields(const Event& e) {
  Present p;
  const Event none;
  if (e.rank != none.rank) p.set(kRank, e.rank);
  if (e.step != none.step) p.set(kStep, e.step);
  if (e.beginNs != 0) p.set(kBegin, e.beginNs);
  if (e.endNs != 0) p.set(kEnd, minus(e.endNs, e.beginNs));
  if (e.bytes != 0) p.set(kBytes, e.bytes);
  if (e.role != none.role) p.set(kRole, e.role);
  if (e.unit != none.unit) p.set(kUnit, e.unit);
  if (e.op != 0) p.set(kOp, e.op);
  if (e.phase != 0) p.set(kPhase, e.phase);
  if (!e.text.empty()) p.set(kText, static_cast<int64_t>(e.text.size()));
  if (e.issueNs != 0) p.set(kIssue, minus(e.beginNs, e.issueNs));
  if (e.bytesOut != 0) p.set(kBytesOut, e.bytesOut);
  if (e.worldSize != 0) p.set(kWorldSize, e.worldSize);
  if (e.microBatch != 0) p.set(kMicroBatch, e.microBatch);
  if (e.fromRole != none.fromRole) p.set(kFromRole, e.fromRole);
  if (e.space != 0) p.set(kSpace, e.space);
  if (e.processGroup != 0) p.set(kProcessGroup, e.processGroup);
  if (e.pausedNs != 0) p.set(kPaused, e.pausedNs);
  if (lossBits(e.loss) != 0) p.set(kLoss, static_cast<int64_t>(lossBits(e.loss)));
  if (e.ownPartBytes != 0) p.set(kOwnPartBytes, e.ownPartBytes);
  if (e.sequence != 0) p.set(kSequence, e.sequence);
  if (e.parameterCount != 0) p.set(kParameterCount, e.parameterCount);
  if (e.deviceMemoryBytes != 0) p.set(kDeviceMemoryBytes, e.deviceMemoryBytes);
  if (e.peakFlopsPerSecond != 0) p.set(kPeakFlops, e.peakFlopsPerSecond);
  if (e.droppedEvents != 0) p.set(kDroppedEvents, e.droppedEvents);
  if (e.uncertaintyNs != 0) p.set(kUncertainty, e.uncertaintyNs);
  if (e.peer != 0) p.set(kPeer, e.peer);
  return p;
}

class PayloadReader {
 public:
  explicit PayloadReader(std::string_view payload) : p_(payload.data()), end_(payload.data() + payload.size()) {}

  bool varint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return false;
      const auto byte = static_cast<uint8_t>(*p_++);
      v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return true;
    }
    return false;
  }
  bool bytes(size_t n, std::string& out) {
    if (static_cast<size_t>(end_ - p_) < n) return false;
    out.assign(p_, n);
    p_ += n;
    return true;
  }
  bool done() const { return p_ == end_; }

 private:
  const char* p_;
  const char* end_;
};

template <typename Narrow>
bool narrow(int64_t v, Narrow& out) {
  if (v < std::numeric_limits<Narrow>::min() || v > std::numeric_limits<Narrow>::max()) return false;
  out = static_cast<Narrow>(v);
  return true;
}

// The fields each of one kind's figures, read off the wire.
bool assignFigure(Event& e, Field f, int64_t v) {
  switch (f) {
    case kOwnPartBytes:
      e.ownPartBytes = v;
      return true;
    case kSequence:
      e.sequence = v;
      return true;
    case kParameterCount:
      e.parameterCount = v;
      return true;
    case kDeviceMemoryBytes:
      e.deviceMemoryBytes = v;
      return true;
    case kPeakFlops:
      e.peakFlopsPerSecond = v;
      return true;
    case kDroppedEvents:
      e.droppedEvents = v;
      return true;
    case kUncertainty:
      e.uncertaintyNs = v;
      return true;
    case kPeer:
      return narrow(v, e.peer);
    default:
      return false;  // kText and kLoss are read on their own
  }
}

// One field's value, read off the wire, into the event (the times once the begin time is known:
// they follow it in the payload). A legacy count waits in `legacyCount` for the kind to place it.
bool assignField(Event& e, Field f, int64_t v, int64_t& legacyCount) {
  switch (f) {
    case kRank:
      return narrow(v, e.rank);
    case kStep:
      return narrow(v, e.step);
    case kBegin:
      e.beginNs = v;
      return true;
    case kEnd:
      e.endNs = plus(e.beginNs, v);
      return true;
    case kBytes:
      e.bytes = v;
      return true;
    case kRole:
      return narrow(v, e.role);
    case kUnit:
      return narrow(v, e.unit);
    case kOp:
      return narrow(v, e.op);
    case kPhase:
      return narrow(v, e.phase);
    case kIssue:
      e.issueNs = minus(e.beginNs, v);
      return true;
    case kBytesOut:
      e.bytesOut = v;
      return true;
    case kWorldSize:
      return narrow(v, e.worldSize);
    case kLegacyCount:
      legacyCount = v;
      return true;
    case kMicroBatch:
      return narrow(v, e.microBatch);
    case kFromRole:
      return narrow(v, e.fromRole);
    case kSpace:
      return narrow(v, e.space);
    case kProcessGroup:
      return narrow(v, e.processGroup);
    case kPaused:
      e.pausedNs = v;
      return true;
    default:
      return assignFigure(e, f, v);
  }
}

}  // namespace

bool namesKnownValues(const Event& e) {
  if (e.kind == EventKind::Memory && e.role >= kMemoryRoleCount) return false;
  if (e.kind == EventKind::Memory && e.space > static_cast<uint8_t>(MemorySpace::Host)) return false;
  if (e.kind == EventKind::Compute && e.op >= kComputeKindCount) return false;
  const bool collective =
      e.kind == EventKind::Collective || e.kind == EventKind::CollectiveIssued || e.kind == EventKind::CollectiveFailed;
  if (collective && e.op >= kCollectiveOpCount) return false;
  if (collective && e.processGroup >= kProcessGroupCount) return false;
  if (e.kind == EventKind::Group && e.op >= kGroupKindCount) return false;
  return true;
}

void appendEventFrame(std::string& out, const Event& e) {
  const Present present = presentFields(e);
  const size_t frameAt = out.size();
  // The payload goes straight into `out` behind a one-byte length, as nearly every event's is
  // under 128 bytes; a longer one's length is widened once it is known.
  out += static_cast<char>(kFrameMark);
  out += '\0';
  const size_t payloadAt = out.size();
  out += static_cast<char>(e.kind);
  appendVarint(out, present.mask);
  for (uint32_t f = 0; f < kFieldCount; ++f) {
    if (!(present.mask & (1u << f))) continue;
    if (f == kLoss) {
      appendVarint(out, static_cast<uint64_t>(present.values[f]));  // the double's bits
    } else if (f == kText) {
      appendVarint(out, e.text.size());
      out += e.text;
    } else {
      appendVarint(out, zigzag(present.values[f]));
    }
  }
  const size_t length = out.size() - payloadAt;
  if (length < 0x80) {
    out[frameAt + 1] = static_cast<char>(length);
    return;
  }
  std::string wide;
  appendVarint(wide, length);
  out.replace(frameAt + 1, 1, wide);
}

std::optional<Event> decodeEventFramePayload(std::string_view payload) {
  PayloadReader in(payload.substr(std::min<size_t>(1, payload.size())));
  uint64_t mask = 0;
  if (payload.empty() || static_cast<uint8_t>(payload[0]) > kLastEventKind || !in.varint(mask) ||
      mask >= (1u << kFieldCount)) {
    return std::nullopt;
  }
  Event e;
  e.kind = static_cast<EventKind>(payload[0]);
  int64_t legacyCount = 0;
  for (uint32_t f = 0; f < kFieldCount; ++f) {
    if (!(mask & (1u << f))) continue;
    uint64_t v = 0;
    if (!in.varint(v)) return std::nullopt;
    if (f == kLoss) {
      std::memcpy(&e.loss, &v, sizeof v);
    } else if (f == kText) {
      if (v > kMaxFrameBytes || !in.bytes(static_cast<size_t>(v), e.text)) return std::nullopt;
    } else if (!assignField(e, static_cast<Field>(f), unzigzag(v), legacyCount)) {
      return std::nullopt;
    }
  }
  if (!in.done() || !namesKnownValues(e)) return std::nullopt;
  placeLegacyFigures(e, legacyCount);
  return e;
}

namespace {

// A frame's payload length and where its payload starts, from `at` (its mark); `complete` false
// while more bytes are needed, `damaged` for a length no frame has.
struct FrameHeader {
  size_t payloadAt = 0;
  uint64_t length = 0;
  bool complete = false;
  bool damaged = false;
};

FrameHeader frameHeader(std::string_view bytes, size_t at) {
  FrameHeader h;
  for (size_t i = at + 1, shift = 0; i < bytes.size(); ++i, shift += 7) {
    const auto byte = static_cast<uint8_t>(bytes[i]);
    h.length |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if (shift > 21 || h.length > kMaxFrameBytes) {
      h.damaged = true;
      return h;
    }
    if (!(byte & 0x80)) {
      h.payloadAt = i + 1;
      h.complete = bytes.size() - h.payloadAt >= h.length;
      return h;
    }
  }
  return h;
}

}  // namespace

StreamItemBounds nextStreamItem(std::string_view bytes, size_t start) {
  if (start < bytes.size() && static_cast<uint8_t>(bytes[start]) == kFrameMark) {
    const FrameHeader h = frameHeader(bytes, start);
    // A damaged length: its mark alone is the item (refused by the decoder), and what follows is
    // read as a line, to its end.
    if (h.damaged) return {start + 1, start + 1};
    if (!h.complete) return {};
    const size_t end = h.payloadAt + static_cast<size_t>(h.length);
    return {end, end};
  }
  const size_t newline = bytes.find('\n', start);
  if (newline == std::string_view::npos) return {};
  return {newline, newline + 1};
}

size_t itemBoundaryFrom(std::string_view stream, size_t from) {
  size_t start = 0;
  for (StreamItemBounds item; (item = nextStreamItem(stream, start)).next != 0; start = item.next) {
    if (item.next >= from) return item.next;
  }
  return std::string_view::npos;
}

std::optional<Event> decodeStreamItem(std::string_view item) {
  if (item.empty()) return std::nullopt;  // a heartbeat
  if (static_cast<uint8_t>(item[0]) != kFrameMark) return decodeEventLine(item);
  const FrameHeader h = frameHeader(item, 0);
  if (!h.complete || h.damaged || h.payloadAt + h.length != item.size()) return std::nullopt;
  return decodeEventFramePayload(item.substr(h.payloadAt));
}

int64_t legacyCountOf(const Event& e) {
  switch (e.kind) {
    case EventKind::RunInfo:
      return e.parameterCount;
    case EventKind::RunDone:
    case EventKind::Dropped:
      return e.droppedEvents;
    case EventKind::ClockOffset:
      return e.uncertaintyNs;
    case EventKind::CollectiveIssued:
      return e.sequence;
    case EventKind::Collective:
    case EventKind::CollectiveFailed:
      if (isPointToPoint(static_cast<CollectiveOp>(e.op))) return e.peer;
      return e.op == static_cast<uint8_t>(CollectiveOp::AllToAll) ? e.ownPartBytes : 0;
    default:
      return 0;
  }
}

void placeLegacyFigures(Event& e, int64_t count) {
  // The device's figures rode in the collectives' byte fields, which a RunInfo has none of now.
  if (e.kind == EventKind::RunInfo && e.bytes != 0) e.deviceMemoryBytes = std::exchange(e.bytes, 0);
  if (e.kind == EventKind::RunInfo && e.bytesOut != 0) e.peakFlopsPerSecond = std::exchange(e.bytesOut, 0);
  if (count == 0) return;  // every figure's default: nothing to place
  switch (e.kind) {
    case EventKind::RunInfo:
      e.parameterCount = count;
      return;
    case EventKind::RunDone:
    case EventKind::Dropped:
      e.droppedEvents = count;
      return;
    case EventKind::ClockOffset:
      e.uncertaintyNs = count;
      return;
    case EventKind::CollectiveIssued:
      e.sequence = count;
      return;
    case EventKind::Collective:
    case EventKind::CollectiveFailed:
      if (isPointToPoint(static_cast<CollectiveOp>(e.op))) e.peer = static_cast<int32_t>(count);
      if (e.op == static_cast<uint8_t>(CollectiveOp::AllToAll)) e.ownPartBytes = count;
      return;
    default:
      return;  // a StepEnd's count said whether the step was recorded, which nothing read
  }
}

}  // namespace shardscope::trace
