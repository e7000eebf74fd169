// The spans a rank's timeline keeps (RankTimeline), one packed record per kind: the fields of
// trace::Event that kind uses, its name interned (trace/names.h). A compute span or an event group
// is 32 bytes and a collective 72, where a whole Event takes 128 with a std::string (and, for a
// name past 15 characters, a heap block). Spans are most of a long run's retained events, so this
// is most of what a window holds (the bytes it holds per event: docs/benchmarks.md, "Bytes per
// retained event").
//
// Field names are Event's, so code reads a span as it read the event; `text()` is Event::text.
#pragma once

#include <cstdint>
#include <string>

#include "trace/events.h"
#include "trace/names.h"

namespace shardscope::trace {

struct ComputeSpan {
  int64_t beginNs = 0;
  int64_t endNs = 0;
  int32_t step = -1;
  int32_t microBatch = 0;
  NameId name = kEmptyName;  // the unit
  uint8_t op = 0;            // ComputeKind
  uint8_t phase = 0;         // Phase

  const std::string& text() const { return nameOf(name); }
  // `names`: who holds its name (a recording's rank); none: the name is kept for the process.
  static ComputeSpan of(const Event& compute, NameHolder* names = nullptr);
  Event toEvent(int rank) const;
};

struct CollectiveSpan {
  int64_t beginNs = 0;
  int64_t endNs = 0;
  int64_t issueNs = 0;
  int64_t bytes = 0;
  int64_t bytesOut = 0;
  int64_t ownPartBytes = 0;  // an all-to-all's (Event::ownPartBytes)
  int32_t step = -1;
  int32_t microBatch = 0;
  int32_t worldSize = 0;     // the group's size
  int32_t peer = 0;          // a send's or recv's (Event::peer)
  NameId name = kEmptyName;  // "unit" or "unit|implementation"
  uint8_t op = 0;            // CollectiveOp
  uint8_t phase = 0;         // Phase
  uint8_t processGroup = 0;  // ProcessGroup
  uint8_t sizeUnknown = 0;   // Event::sizeUnknown

  const std::string& text() const { return nameOf(name); }
  static CollectiveSpan of(const Event& collective, NameHolder* names = nullptr);
  Event toEvent(int rank) const;
};

// An event group the rank went through (EventKind::Group).
struct GroupSpan {
  int64_t beginNs = 0;
  int64_t endNs = 0;  // when it went on: > beginNs after a pause at the step gate
  int32_t step = -1;
  int32_t microBatch = 0;
  NameId name = kEmptyName;  // its label
  uint8_t op = 0;            // GroupKind
  uint8_t phase = 0;         // Phase

  const std::string& text() const { return nameOf(name); }
  static GroupSpan of(const Event& group, NameHolder* names = nullptr);
  Event toEvent(int rank) const;
};

static_assert(sizeof(ComputeSpan) == 32, "a compute span packs into 32 bytes");
static_assert(sizeof(CollectiveSpan) == 72, "a collective packs into 72 bytes");
static_assert(sizeof(GroupSpan) == 32, "an event group packs into 32 bytes");

// events.h's helpers, for the packed records.
bool isRecomputation(const ComputeSpan& compute);
bool isOffloadSpan(const ComputeSpan& compute);
std::string computeSpanName(const ComputeSpan& compute);
std::string collectiveSpanName(const CollectiveSpan& collective);
int64_t collectiveSizeBytes(const CollectiveSpan& collective);
std::string collectiveUnit(const CollectiveSpan& collective);
std::string collectiveImplementation(const CollectiveSpan& collective);

}  // namespace shardscope::trace
