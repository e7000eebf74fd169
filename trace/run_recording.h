// The retained model of a run: per rank, time-ordered memory samples, collectives, compute spans
// and steps, plus what is derived from them (peaks, per-op totals, overlap). The controller fills
// it from the merged event stream; the CLI tables, the trace export and the UI all read it.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "trace/events.h"
#include "trace/range_max.h"
#include "trace/role_track.h"
#include "trace/spans.h"
#include "trace/time_index.h"

namespace shardscope::trace {

struct CollectiveTotals {
  int64_t count = 0;
  int64_t unsized = 0;        // of count, those whose trace recorded no size (their bytes count 0)
  int64_t sizeBytes = 0;      // the collectives' sizes as nccl-tests counts them (collectiveSizeBytes)
  int64_t sentBytes = 0;      // what this rank sent of them under the ring schedule (ring_schedule.h)
  int64_t receivedBytes = 0;  // and received
  double seconds = 0;         // sum of start->end durations
};

// Adds `t` into `into`; the totals over every collective type.
void addTotals(CollectiveTotals& into, const CollectiveTotals& t);
// `bytes` of `t` (its size, sent or received), over `steps`, as a table shows it: "size not
// recorded" where no collective of `t` had a recorded size (never a 0 that reads as measured), and
// "(+N unsized)" after the figure where some had none.
std::string formatCollectiveBytes(const CollectiveTotals& t, int64_t bytes, double steps);
CollectiveTotals allCollectives(const std::array<CollectiveTotals, kCollectiveOpCount>& perOp);

// What one rank holds of one model unit, after each of its memory events that name it.
struct UnitMemoryTrack {
  int32_t unit = kNoUnit;  // block index, or -1 for the root; kNoUnit: slot unused
  RoleTrack samples;       // only tensor roles; time-ordered
  RoleBytes peakByRole{};
};

// What a recording that keeps only its last steps in detail (RunRecording::keepLastSteps) folded
// away, as the running figures the summary reads: everything here is of completed steps.
struct FoldedSteps {
  int steps = 0;                                                    // StepEnd events folded
  std::vector<double> losses;                                       // each one's loss (its StepEnd's)
  std::vector<double> stepSeconds;                                  // each one's time without step-gate pauses
  std::vector<double> exposedCommSeconds;                           // each one's collective time no compute hid
  std::array<CollectiveTotals, kCollectiveOpCount> collectives{};   // of collectives in a step
  std::array<CollectiveTotals, kCollectiveOpCount> outsideSteps{};  // before the first (a broadcast)
  std::array<int64_t, kProcessGroupCount> sentBytesByGroup{};       // ring schedule, as collectives
  int64_t commNs = 0;                                               // the union of collective time
  int64_t hiddenCommNs = 0;                                         // of it, under forward or backward compute
  int64_t recomputeNs = 0;                                          // activation checkpointing's forwards in backward
  int64_t activationSavedBytes = 0;                                 // the most held as any backward began
  size_t groups = 0;  // event groups folded: a view that numbers a rank's groups from the run's first
};

// A GPU rank's host memory under --offload cpu (Memory events in MemorySpace::Host), by tensor
// role and per model unit ("who holds what" draws the host's row under the device's); empty for
// every other run.
struct HostMemory {
  RoleTrack memory;                    // bytes per role after each host memory event, time-ordered
  RangeMax totals;                     // their sums, with the highest in any range
  std::vector<UnitMemoryTrack> units;  // per model unit, at index unit + 1 (the root at 0)
  RoleBytes current{};
  RoleBytes peakByRole{};
  int64_t peakTotal = 0;
  RoleBytes atPeakTotal{};
};

struct RankTimeline {
  RoleTrack memory;  // bytes per role after each memory event, time-ordered
  // Its tensor totals (the sum over the tensor roles: allocated, on a GPU), with the highest in
  // any range. And compact copies of what a view searches every frame, so a sweep over millions of
  // spans reads 8 bytes per probe instead of a cache line: compute[i].beginNs, collectives[i].beginNs.
  RangeMax memoryTotals;
  std::vector<CollectiveSpan> collectives;
  std::vector<ComputeSpan> compute;
  TimeIndex collectiveBegins;          // collectives[i].beginNs
  TimeIndex computeBegins;             // compute[i].beginNs
  std::vector<Event> steps;            // StepEnd events
  std::vector<GroupSpan> groups;       // the event groups the rank went through
  std::vector<GroupSpan> pauses;       // those the rank waited at the step gate before (few)
  std::vector<UnitMemoryTrack> units;  // per model unit, at index unit + 1 (the root at 0)
  int64_t longestCompute = 0;          // ns; lets a viewer binary-search spans by start time
  int64_t longestCollective = 0;       // ns
  RoleBytes current{};
  RoleBytes peakByRole{};     // each role's own maximum over the run
  int64_t peakTotal = 0;      // maximum of the tensor total (peak allocated)
  RoleBytes atPeakTotal{};    // the split by role at the moment of peakTotal
  int64_t peakDevice = 0;     // maximum of tensors + allocator cache + runtime
  HostMemory host;            // --offload cpu on a GPU: what the rank holds in host memory
  bool offloadSpans = false;  // compute holds --offload cpu's copies and pinning
  // The collectives the backend failed (their timeout passed, a peer went away), which never ended:
  // CollectiveFailed events, in time order. Few (a rank stops at its first failure): never folded.
  std::vector<Event> failedCollectives;
  int64_t dropped = 0;          // events the rank could not record
  int64_t negativeBalance = 0;  // frees of bytes never seen allocated (should stay 0)
  FoldedSteps folded;           // the steps before `steps[0]` when detail is folded
  NameHolder names;             // its spans' names, held while it (or older detail it handed on) lives
  // RunRecording::exposedCommCached's last answer, and the span counts it holds for.
  mutable std::vector<std::pair<int64_t, int64_t>> exposedComm;
  mutable size_t exposedCommFor[2] = {SIZE_MAX, SIZE_MAX};
};

// Index of the first span (sorted by begin, as a RankTimeline keeps them) that begins at or after
// tNs. Viewers start from here, less the widest span's length, to find what is in flight at a time.
template <class Span>
size_t firstSpanFrom(const std::vector<Span>& spans, double tNs) {
  size_t lo = 0, hi = spans.size();
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (static_cast<double>(spans[mid].beginNs) < tNs) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// The exposed communication of the detail a timeline holds (its folded steps' figures apart): the
// collective time (the union of its collectives), the part of it no forward or backward span
// overlaps, what the rank waited on the network with nothing to compute (sorted, disjoint
// [begin, end) in ns), and the rest, what compute hid. HTA's comm/compute overlap (Holistic Trace
// Analysis, "Communication Computation Overlap") is that rest over the collective time. The one
// walk every figure of it comes from.
struct CommExposure {
  int64_t commNs = 0;
  int64_t hiddenNs = 0;
  std::vector<std::pair<int64_t, int64_t>> exposed;
};
CommExposure commExposureOf(const RankTimeline& detail);
// Of sorted, disjoint intervals (the exposed ones, the compute ones), the nanoseconds within each
// of `windows` (sorted by begin; they may overlap), and the seconds within each of the detail's steps.
std::vector<int64_t> coveredNs(const std::vector<std::pair<int64_t, int64_t>>& windows,
                               const std::vector<std::pair<int64_t, int64_t>>& intervals);
std::vector<double> secondsPerStep(const RankTimeline& detail,
                                   const std::vector<std::pair<int64_t, int64_t>>& intervals);
// When the rank computed: the union of its forward and backward spans, sorted and disjoint [begin,
// end) in ns (what hides communication, and what a pipeline's bubble is the rest of).
std::vector<std::pair<int64_t, int64_t>> computeIntervals(const RankTimeline& detail);
// The activation bytes held at each moment backward began (a backward span right after forward
// ones), the largest of them; 0 without compute spans.
int64_t activationSavedForBackward(const RankTimeline& detail);

// What a window's session, or a summary read from a trace, holds in detail over its ranks unless
// told otherwise (--window-events): 0.7 to 0.9 GB at the 30 to 36 bytes a retained event takes
// (docs/benchmarks.md, "Bytes per retained event"). A longer run folds its older steps.
constexpr size_t kDefaultDetailEvents = 24'000'000;

// Each StepEnd of `detail` by its step number: what a trace writes on the step's span (its loss,
// its pause at the step gate), so a reader gets them back.
std::map<int, const Event*> stepEndsByStep(const RankTimeline& detail);

class RunRecording;
// The first rank that recorded a step (a job opened without rank 0's file starts at another): the
// one whose steps are the job's. 0 when none did.
int firstRecordedRank(const RunRecording& recording);
// Events the ranks could not record (their buffers were full), over every rank.
int64_t droppedEvents(const RunRecording& recording);
// "1,204 events were dropped (rank 0: 1,000; rank 1: 204)", or "" when none were: what the CLI, the
// summary's readers and the window say of a recording that is incomplete.
std::string droppedEventsText(const RunRecording& recording);
// A line per collective the backend failed (RankTimeline::failedCollectives): "rank 1: all_gather
// blocks.1 in step 3 failed after 2.00 s in flight (...)"; "" when none did.
std::string failedCollectivesText(const RunRecording& recording);

class RunRecording {
 public:
  explicit RunRecording(int ranks = 0);

  void reset(int ranks);
  void ensureRanks(int ranks);   // at least this many (a reader learns them as it goes)
  void add(const Event& event);  // expects each rank's events in time order (see StreamMerger)

  // Bounded memory for a long run: once a rank has finished 2 x `steps` steps in detail, the older
  // half is handed to `spill` (to stream it to a trace file) and then dropped, keeping only its
  // running figures (RankTimeline::folded) and the peaks. Every figure below still covers the whole
  // run; views see only the detail kept. 0 (the default) keeps everything.
  // The older detail is handed over to keep (a writer thread takes it as it is).
  using Spill = std::function<void(int rank, RankTimeline&& olderDetail)>;
  void keepLastSteps(int steps, Spill spill);
  // The same by size, for a window that shows the detail: once a rank holds more than `events`
  // (memory samples, per-unit samples, spans and event groups), its oldest sixteenth of steps go, on
  // every rank alike (each at its next step end).
  void keepDetailWithin(size_t events, Spill spill);
  // The same with `events` over every rank: each rank keeps its share among the ranks known when it
  // folds (a trace's reader learns them as it reads). What bounds a recording opened from a file.
  void keepDetailWithinOverRanks(size_t events, Spill spill);
  // A rank's events held in detail, as keepDetailWithin counts them.
  size_t detailEvents(int rank) const;
  // The bytes they take (their sizes, as TimeIndex::heldBytes): what a window's memory per
  // retained event is measured by.
  size_t detailBytes(int rank) const;

  int ranks() const { return static_cast<int>(ranks_.size()); }
  const RankTimeline& rank(int r) const { return ranks_.at(static_cast<size_t>(r)); }
  int64_t originNs() const { return origin_; }  // earliest timestamp seen
  // --tp's group size, from the tensor groups' collectives seen (1: none): where a hybrid
  // strategy's shard and replicate groups lie (trace::processGroupMembers).
  int tensorRanks() const { return tensorRanks_; }
  int pipeRanks() const { return pipeRanks_; }  // --pp's P, from the pipe groups' collectives
  // A reader's word that the world's collectives include sub-groups' it could not tell apart (a
  // Gloo trace names no group): then none of them is matched rank to rank (stats/stragglers.h).
  void setWorldCollectivesMixed(bool mixed) { worldCollectivesMixed_ = mixed; }
  bool worldCollectivesMixed() const { return worldCollectivesMixed_; }

  // Totals over the collectives of steps [0, steps); steps < 0: every collective.
  std::array<CollectiveTotals, kCollectiveOpCount> collectiveTotals(int rank, int steps = -1) const;
  // The rank's exposed communication (commExposureOf) over the whole run, its folded steps too:
  // the share of its collective time that compute hid, in percent, and the exposed seconds of
  // each completed step (StepEnd order).
  struct CommFigures {
    double overlapPercent = 0;
    std::vector<double> exposedCommSeconds;
  };
  CommFigures commFigures(int rank) const;
  // The exposed intervals of its detail, kept until the rank records another span: for views that
  // draw them every frame.
  const std::vector<std::pair<int64_t, int64_t>>& exposedCommCached(int rank) const;
  // Each step's duration without the time it waited at the step gate.
  std::vector<double> stepSeconds(int rank) const;
  // Bytes sent (ring schedule) per process group, over the collectives of steps [0, steps).
  std::array<int64_t, kProcessGroupCount> sentBytesByGroup(int rank, int steps) const;
  // Activation checkpointing's recomputation (forward spans in backward) in steps [0, steps), ns.
  int64_t recomputeNs(int rank, int steps) const;
  // The activation bytes held when backward began, the largest over the run.
  int64_t activationSavedBytes(int rank) const;
  // What `rank` held of `unit` at absolute time tNs (the last sample at or before it); zeros when
  // nothing was recorded for that unit.
  RoleBytes unitMemoryAt(int rank, int32_t unit, int64_t tNs, MemorySpace space = MemorySpace::Device) const;
  // The model units any rank recorded memory for, on the device or the host, root first then
  // blocks in order.
  std::vector<int32_t> recordedUnits() const;

 private:
  void foldOlderSteps(int rank, size_t steps);
  // Folds what the budget asks of `rank`, among its steps that ended by `completeByNs` (whose
  // events have all been added).
  void foldWithinBudget(int rank, int64_t completeByNs);

  std::vector<RankTimeline> ranks_;
  int64_t origin_ = INT64_MAX;
  int tensorRanks_ = 1;
  int pipeRanks_ = 1;
  bool worldCollectivesMixed_ = false;
  int keepSteps_ = 0;
  size_t maxDetailEvents_ = 0;
  size_t detailOverRanks_ = 0;  // keepDetailWithinOverRanks: maxDetailEvents_ is its share per rank
  // A trace's reader may add a step's end before its events (a Chrome trace's step span comes
  // where the step began): the budget is then checked every so many events too.
  size_t eventsSinceBudgetCheck_ = 0;
  static constexpr size_t kBudgetCheckEvery = 4096;
  int32_t foldThroughStep_ = -1;            // keepDetailWithin: every rank folds its steps up to this one
  static constexpr size_t kFoldShare = 16;  // keepDetailWithin folds 1/kFoldShare of its steps at a time
  Spill spill_;
};

}  // namespace shardscope::trace
