#include "trace/spans.h"

namespace shardscope::trace {

namespace {

NameId nameFor(const std::string& text, NameHolder* names) { return names ? names->intern(text) : internName(text); }

}  // namespace

ComputeSpan ComputeSpan::of(const Event& e, NameHolder* names) {
  ComputeSpan s;
  s.beginNs = e.beginNs;
  s.endNs = e.endNs;
  s.step = e.step;
  s.microBatch = e.microBatch;
  s.name = nameFor(e.text, names);
  s.op = e.op;
  s.phase = e.phase;
  return s;
}

Event ComputeSpan::toEvent(int rank) const {
  Event e;
  e.kind = EventKind::Compute;
  e.rank = rank;
  e.beginNs = beginNs;
  e.endNs = endNs;
  e.step = step;
  e.microBatch = microBatch;
  e.text = text();
  e.op = op;
  e.phase = phase;
  return e;
}

CollectiveSpan CollectiveSpan::of(const Event& e, NameHolder* names) {
  CollectiveSpan s;
  s.beginNs = e.beginNs;
  s.endNs = e.endNs;
  s.issueNs = e.issueNs;
  s.bytes = e.bytes;
  s.bytesOut = e.bytesOut;
  s.ownPartBytes = e.ownPartBytes;
  s.peer = e.peer;
  s.step = e.step;
  s.microBatch = e.microBatch;
  s.worldSize = e.worldSize;
  s.name = nameFor(e.text, names);
  s.op = e.op;
  s.phase = e.phase;
  s.processGroup = e.processGroup;
  s.sizeUnknown = e.sizeUnknown;
  return s;
}

Event CollectiveSpan::toEvent(int rank) const {
  Event e;
  e.kind = EventKind::Collective;
  e.rank = rank;
  e.beginNs = beginNs;
  e.endNs = endNs;
  e.issueNs = issueNs;
  e.bytes = bytes;
  e.bytesOut = bytesOut;
  e.ownPartBytes = ownPartBytes;
  e.peer = peer;
  e.step = step;
  e.microBatch = microBatch;
  e.worldSize = worldSize;
  e.text = text();
  e.op = op;
  e.phase = phase;
  e.processGroup = processGroup;
  e.sizeUnknown = sizeUnknown;
  return e;
}

GroupSpan GroupSpan::of(const Event& e, NameHolder* names) {
  GroupSpan s;
  s.beginNs = e.beginNs;
  s.endNs = e.endNs;
  s.step = e.step;
  s.microBatch = e.microBatch;
  s.name = nameFor(e.text, names);
  s.op = e.op;
  s.phase = e.phase;
  return s;
}

Event GroupSpan::toEvent(int rank) const {
  Event e;
  e.kind = EventKind::Group;
  e.rank = rank;
  e.beginNs = beginNs;
  e.endNs = endNs;
  e.step = step;
  e.microBatch = microBatch;
  e.text = text();
  e.op = op;
  e.phase = phase;
  return e;
}

bool isRecomputation(const ComputeSpan& c) {
  return isRecomputation(static_cast<ComputeKind>(c.op), static_cast<Phase>(c.phase));
}

bool isOffloadSpan(const ComputeSpan& c) { return isOffloadKind(static_cast<ComputeKind>(c.op)); }

std::string computeSpanName(const ComputeSpan& c) {
  return computeSpanName(static_cast<ComputeKind>(c.op), static_cast<Phase>(c.phase), c.step, c.text());
}

std::string collectiveSpanName(const CollectiveSpan& c) {
  return collectiveSpanName(static_cast<CollectiveOp>(c.op), static_cast<ProcessGroup>(c.processGroup), c.text());
}

int64_t collectiveSizeBytes(const CollectiveSpan& c) {
  return static_cast<CollectiveOp>(c.op) == CollectiveOp::AllGather ? c.bytesOut : c.bytes;
}

std::string collectiveUnit(const CollectiveSpan& c) { return collectiveUnit(c.text()); }

std::string collectiveImplementation(const CollectiveSpan& c) {
  return collectiveImplementation(static_cast<CollectiveOp>(c.op), c.text());
}

}  // namespace shardscope::trace
