#include "config/pipeline_schedule.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

#include "config/pipeline_batches.h"
#include "config/pipeline_transfers.h"

namespace shardscope::config {
namespace {

using Kind = PipeActionKind;

// The shapes every schedule is checked at: odd and even P, fewer micro-batches than ranks, several rounds.
std::vector<PipelineShape> shapesToCheck() {
  std::vector<PipelineShape> out;
  for (int p : {2, 3, 4}) {
    for (int m : {1, 2, 3, 4, 6, 8}) {
      out.push_back({PipelineSchedule::GPipe, p, 1, m});
      if (m >= p) out.push_back({PipelineSchedule::OneFOneB, p, 1, m});
      for (int v : {2, 3}) {
        for (auto s : {PipelineSchedule::Interleaved1F1B, PipelineSchedule::ZeroBubble}) {
          if (!pipelineShapeProblem({s, p, v, m})) out.push_back({s, p, v, m});
        }
      }
      out.push_back({PipelineSchedule::Zbv, p, 2, m});
      if (m >= 2 * p) out.push_back({PipelineSchedule::DualPipeV, p, 2, m});
    }
    out.push_back({PipelineSchedule::DualPipeV, p, 2, 2 * p + 3});
  }
  return out;
}

std::string describe(const PipelineShape& s) {
  return std::string(modeName(s.schedule)) + " P=" + std::to_string(s.ranks) + " V=" + std::to_string(s.stagesPerRank) +
         " M=" + std::to_string(s.microBatches);
}

// Each rank runs, for each stage it holds and each micro-batch, one forward and one backward (or
// one I and one W after it: zero bubble's and zbv's always, dualpipev's from its middle on), the
// forwards and the backwards (B or I) in micro-batch order, and a stage's backward after its forward.
TEST(PipelineSchedule, EveryRankRunsEachMicroBatchOnceThroughEachOfItsStages) {
  for (const auto& shape : shapesToCheck()) {
    SCOPED_TRACE(describe(shape));
    const bool split = shape.schedule == PipelineSchedule::ZeroBubble || shape.schedule == PipelineSchedule::Zbv;
    const bool mixed = shape.schedule == PipelineSchedule::DualPipeV;
    std::set<int> stagesSeen;
    for (int r = 0; r < shape.ranks; ++r) {
      std::map<std::pair<int, Kind>, int> next;  // (stage, F or B) -> the micro-batch expected next
      std::set<std::pair<int, int>> forwarded, inputOnly, weighed;
      for (const PipeAction& a : computeActions(shape, r)) {
        EXPECT_EQ(rankOfStage(shape, a.stage), r) << actionText(a);
        if (!mixed) EXPECT_EQ(a.kind == Kind::Backward, !split && a.kind != Kind::Forward) << actionText(a);
        const std::pair<int, int> key{a.stage, a.microBatch};
        if (a.kind == Kind::BackwardWeight) {
          EXPECT_TRUE(inputOnly.count(key) && weighed.insert(key).second) << actionText(a) << ": W once, after its I";
          continue;
        }
        const Kind counted = a.kind == Kind::BackwardInput ? Kind::Backward : a.kind;
        EXPECT_EQ((next[{a.stage, counted}]++), a.microBatch) << actionText(a) << " out of order";
        if (a.kind == Kind::Forward) forwarded.insert(key);
        if (a.kind == Kind::BackwardInput) inputOnly.insert(key);
        if (a.kind != Kind::Forward) EXPECT_TRUE(forwarded.count(key)) << actionText(a);
      }
      EXPECT_EQ(weighed, inputOnly) << "every I's W";
      if (mixed) EXPECT_FALSE(inputOnly.empty()) << "dualpipev splits its last backwards";
      for (int stage : stagesOfRank(shape, r)) {
        stagesSeen.insert(stage);
        for (Kind k : {Kind::Forward, Kind::Backward}) EXPECT_EQ((next[{stage, k}]), shape.microBatches);
      }
    }
    EXPECT_EQ(static_cast<int>(stagesSeen.size()), shape.stages());
  }
}

// Laid out with every rank waiting only for what it needs, each schedule finishes: no rank's
// order waits on an action another rank runs after its own wait.
TEST(PipelineSchedule, EveryScheduleRunsToItsEndWithoutARankWaitingForever) {
  for (const auto& shape : shapesToCheck()) {
    std::string stuck;
    EXPECT_TRUE(plannedTimeline(shape, {}, &stuck).has_value()) << describe(shape) << ": " << stuck;
  }
}

// Every send has its receive on the peer's rank, and no transfer stays on one rank.
TEST(PipelineSchedule, EachSendIsReceivedByTheNextOrPreviousStagesRank) {
  for (const auto& shape : shapesToCheck()) {
    SCOPED_TRACE(describe(shape));
    std::multiset<std::tuple<int, int, int, int>> sent, received;  // (from rank, to rank, what, micro-batch)
    for (int r = 0; r < shape.ranks; ++r) {
      for (const PipeAction& a : rankActions(shape, r)) {
        switch (a.kind) {
          case Kind::SendActivation:
            sent.insert({r, rankOfStage(shape, a.stage + 1), a.stage, a.microBatch});
            break;
          case Kind::RecvActivation:
            received.insert({rankOfStage(shape, a.stage - 1), r, a.stage - 1, a.microBatch});
            break;
          case Kind::SendGradient:
            sent.insert({r, rankOfStage(shape, a.stage - 1), -a.stage, a.microBatch});
            break;
          case Kind::RecvGradient:
            received.insert({rankOfStage(shape, a.stage + 1), r, -(a.stage + 1), a.microBatch});
            break;
          default:
            break;
        }
      }
    }
    EXPECT_EQ(sent, received);
    for (const auto& t : sent) EXPECT_NE(std::get<0>(t), std::get<1>(t));
  }
}

// The ranks' lists walked as NCCL runs their transfers (`oneStream`: a rank's one after another,
// each waiting for its peer's: a send until its receive is posted, a receive until its send is;
// NCCL's rule between two ranks, so exact where P = 2 and stricter above) or as Gloo does (a send
// posts and goes on); a batch waits for both of its own. Where a
// rank stops for good: "rank R at ACTION"; "" where every list ran to its end.
std::string whereTheListsStop(const PipelineShape& shape, const std::vector<std::vector<bool>>& batched,
                              bool oneStream) {
  using Message = std::tuple<int, int, int, int>;  // (from rank, to rank, stage it leaves, micro-batch x kind)
  std::vector<std::vector<PipeAction>> lists;
  for (int r = 0; r < shape.ranks; ++r) lists.push_back(rankActions(shape, r));
  const auto isSend = [](const PipeAction& a) {
    return a.kind == Kind::SendActivation || a.kind == Kind::SendGradient;
  };
  const auto messageOf = [&](int r, const PipeAction& a) {
    const int to = isSend(a) ? rankOfStage(shape, carriesGradient(a) ? a.stage - 1 : a.stage + 1) : r;
    const int from = isSend(a) ? r : rankOfStage(shape, sendingStage(a));
    return Message{from, to, sendingStage(a), a.microBatch * 2 + (carriesGradient(a) ? 1 : 0)};
  };
  std::set<Message> sends, receives;
  std::vector<size_t> at(lists.size(), 0);
  for (bool moved = true; moved;) {
    moved = false;
    for (int r = 0; r < shape.ranks; ++r) {
      const auto& list = lists[static_cast<size_t>(r)];
      for (size_t& i = at[static_cast<size_t>(r)]; i < list.size(); moved = true) {
        const PipeAction& a = list[i];
        if (batched[static_cast<size_t>(r)][i]) {
          const Message out = messageOf(r, a), in = messageOf(r, list[i + 1]);
          sends.insert(out);
          receives.insert(in);
          if (!receives.count(out) || !sends.count(in)) break;
          i += 2;
        } else if (isSend(a)) {
          sends.insert(messageOf(r, a));
          if (oneStream && !receives.count(messageOf(r, a))) break;
          ++i;
        } else if (a.kind == Kind::RecvActivation || a.kind == Kind::RecvGradient) {
          receives.insert(messageOf(r, a));
          if (!sends.count(messageOf(r, a))) break;
          ++i;
        } else {
          ++i;
        }
      }
    }
  }
  for (int r = 0; r < shape.ranks; ++r) {
    const auto& list = lists[static_cast<size_t>(r)];
    if (at[static_cast<size_t>(r)] < list.size())
      return "rank " + std::to_string(r) + " at " + actionText(list[at[static_cast<size_t>(r)]]);
  }
  return "";
}

// On NCCL, 1F1B's neighbours each send first in its steady state: one by one, each would wait for
// the other's receive forever (walked so: rank 0 stops at its second send). batchedTransfers puts
// each such send and the receive after it in one batch, as torch.distributed.pipelining's
// Schedule1F1B does, and the lists run to their ends; GPipe's too. The multi-stage schedules batch
// nothing, as PyTorch's runtime: their transfers sit where its lowering puts them (one global
// order), and run to their ends one by one. On Gloo, which batches nothing and never holds a send,
// every schedule's lists run with or without.
TEST(PipelineSchedule, OnNcclEverySchedulesTransfersRunToTheirEnd) {
  for (const auto& shape : shapesToCheck()) {
    SCOPED_TRACE(describe(shape));
    const auto batched = batchedTransfers(shape);
    std::vector<std::vector<bool>> none;
    int batches = 0;
    for (int r = 0; r < shape.ranks; ++r) {
      const auto list = rankActions(shape, r);
      none.emplace_back(list.size(), false);
      for (size_t i = 0; i + 1 < list.size(); ++i) {
        if (!batched[static_cast<size_t>(r)][i]) continue;
        ++batches;
        EXPECT_TRUE(sendThenReceive(list[i], list[i + 1])) << actionText(list[i]);
      }
    }
    EXPECT_EQ(whereTheListsStop(shape, batched, /*oneStream=*/false), "") << "on Gloo";
    EXPECT_EQ(whereTheListsStop(shape, none, /*oneStream=*/false), "") << "on Gloo, one by one";
    EXPECT_EQ(whereTheListsStop(shape, batched, /*oneStream=*/true), "") << "on NCCL";
    if (loopsOverStages(shape.schedule)) {
      EXPECT_EQ(batches, 0) << "the multi-stage schedules issue each transfer alone, as PyTorch's runtime";
      continue;
    }
    if (shape.schedule == PipelineSchedule::OneFOneB && shape.microBatches > shape.ranks) {
      EXPECT_GT(batches, 0);
      EXPECT_NE(whereTheListsStop(shape, none, /*oneStream=*/true), "") << "on NCCL one by one, 1F1B waits forever";
    }
  }
}

// With uniform durations the plan of GPipe and 1F1B idles (P-1)(F+B) per rank: over the ideal
// M(F+B) that is the closed form (P-1)/M, exactly.
TEST(PipelineSchedule, TheOneStageSchedulesPlanTheirClosedFormsBubble) {
  for (auto schedule : {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB}) {
    for (int p : {2, 3, 4}) {
      for (int m : {4, 5, 8}) {
        const PipelineShape shape{schedule, p, 1, m};
        const auto plan = plannedTimeline(shape, {1, 2, 1, 1});
        ASSERT_TRUE(plan);
        const double ideal = m * 3.0;
        double end = 0;
        for (const auto& rank : *plan) end = std::max(end, rank.back().end);
        EXPECT_NEAR((end - ideal) / ideal, bubbleClosedForm(shape).fraction, 1e-12) << describe(shape);
      }
    }
  }
}

// Interleaving shrinks the bubble: V stages per rank plan a shorter step than one, at the same
// P and M and the same work per micro-batch.
TEST(PipelineSchedule, InterleavingPlansAShorterStepThanOneFOneB) {
  for (int p : {2, 4}) {
    const int m = 2 * p, v = 2;
    const auto oneStage = plannedTimeline({PipelineSchedule::OneFOneB, p, 1, m}, {1, 2, 1, 1});
    // The same model cut into V times the stages: each action does 1/V of the work.
    const auto looped = plannedTimeline({PipelineSchedule::Interleaved1F1B, p, v, m}, {1.0 / v, 2.0 / v, 1, 1});
    ASSERT_TRUE(oneStage && looped);
    EXPECT_LT(looped->front().back().end, oneStage->front().back().end) << "P=" << p;
  }
}

TEST(PipelineSchedule, ActionsPrintAsPyTorchPrintsThem) {
  EXPECT_EQ(actionText({Kind::Forward, 1, 3}), "1F3");
  EXPECT_EQ(actionText({Kind::SendActivation, 0, 2}), "0SEND_F2");
  EXPECT_EQ(actionText({Kind::RecvGradient, 1, 0}), "1RECV_B0");
  const std::string text = scheduleText({PipelineSchedule::GPipe, 2, 1, 2});
  EXPECT_EQ(text,
            "rank 0: 0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0B0 0RECV_B1 0B1\n"
            "rank 1: 1RECV_F0 1F0 1RECV_F1 1F1 1B0 1SEND_B0 1B1 1SEND_B1\n");
}

TEST(PipelineSchedule, ActionTextReadsBack) {
  for (const auto schedule : {PipelineSchedule::GPipe, PipelineSchedule::ZeroBubble}) {
    const PipelineShape shape{schedule, 3, schedule == PipelineSchedule::GPipe ? 1 : 2, 12};
    for (int r = 0; r < shape.ranks; ++r) {
      for (const PipeAction& a : rankActions(shape, r)) {
        const auto back = parseActionText(actionText(a));
        ASSERT_TRUE(back) << actionText(a);
        EXPECT_EQ(*back, a) << actionText(a);
      }
    }
  }
  for (const char* notAnAction : {"", "F3", "1F", "forward blocks.1", "1X3", "1SEND_F", "99999999F1", "step start"}) {
    EXPECT_FALSE(parseActionText(notAnAction)) << notAnAction;
  }
}

TEST(PipelineSchedule, ZbvFoldsTheStagesIntoAV) {
  const PipelineShape shape{PipelineSchedule::Zbv, 3, 2, 6};
  EXPECT_EQ(stagesOfRank(shape, 0), (std::vector<int>{0, 5}));
  EXPECT_EQ(stagesOfRank(shape, 2), (std::vector<int>{2, 3}));
  // The V's point: stage 2 hands its output to stage 3 on the same rank, with no transfer.
  for (const PipeAction& a : rankActions(shape, 2)) {
    EXPECT_FALSE(a.kind == Kind::SendActivation && a.stage == 2) << actionText(a);
  }
}

TEST(PipelineSchedule, BlocksSplitAsEvenlyAsTheyGo) {
  for (int blocks : {2, 3, 5, 7, 8}) {
    for (int stages = 1; stages <= blocks; ++stages) {
      const auto split = stageBlocks(blocks, stages);
      int next = 0, fewest = blocks, most = 0;
      for (const auto& s : split) {
        EXPECT_EQ(s.first, next);
        next += s.count;
        fewest = std::min(fewest, s.count);
        most = std::max(most, s.count);
      }
      EXPECT_EQ(next, blocks);
      EXPECT_LE(most - fewest, 1) << blocks << " over " << stages;
      EXPECT_GE(fewest, 1);
    }
  }
}

TEST(PipelineSchedule, ShapesTheSchedulesCannotRunAreRefusedWithTheFix) {
  auto problem = [](PipelineSchedule s, int p, int v, int m) {
    return pipelineShapeProblem({s, p, v, m}).value_or("");
  };
  EXPECT_NE(problem(PipelineSchedule::GPipe, 2, 2, 4).find("Drop --stages-per-rank"), std::string::npos);
  EXPECT_NE(problem(PipelineSchedule::Interleaved1F1B, 2, 1, 4).find("--stages-per-rank 2"), std::string::npos);
  EXPECT_NE(problem(PipelineSchedule::Zbv, 2, 3, 4).find("--stages-per-rank 2"), std::string::npos);
  EXPECT_NE(problem(PipelineSchedule::Interleaved1F1B, 2, 2, 5).find("--microbatches 4"), std::string::npos);
  EXPECT_EQ(problem(PipelineSchedule::Interleaved1F1B, 2, 2, 6), "");
  EXPECT_NE(problem(PipelineSchedule::DualPipeV, 2, 3, 4).find("--stages-per-rank 2"), std::string::npos);
  const std::string tooFew = problem(PipelineSchedule::DualPipeV, 3, 2, 5);
  EXPECT_NE(tooFew.find("--microbatches 5"), std::string::npos) << tooFew;
  EXPECT_NE(tooFew.find("Pass --microbatches 6"), std::string::npos) << tooFew;
  EXPECT_EQ(problem(PipelineSchedule::DualPipeV, 3, 2, 6), "");
}

// DualPipeV's pairs (PyTorch's OVERLAP_F_B): a forward of one chunk and the other chunk's whole
// backward, on the same rank; rank 0's main phase pairs both ways, its last rank's leaves its
// first forward alone.
TEST(PipelineSchedule, DualPipeVPairsOneChunksForwardWithTheOthersBackward) {
  const PipelineShape shape{PipelineSchedule::DualPipeV, 4, 2, 10};
  for (int r = 0; r < shape.ranks; ++r) {
    const auto list = computeActions(shape, r);
    int pairs = 0;
    for (size_t i = 0; i < list.size(); ++i) {
      if (!list[i].pairedWithNext) continue;
      ++pairs;
      ASSERT_LT(i + 1, list.size());
      EXPECT_EQ(list[i].kind, Kind::Forward);
      EXPECT_EQ(list[i + 1].kind, Kind::Backward);
      EXPECT_NE(list[i].stage, list[i + 1].stage) << "the other chunk's";
    }
    // The main phase, M - 2P + r + 1 rounds of two pairs (the last rank's first one unpaired),
    // then P - r - 1 more.
    const int main = shape.microBatches - 2 * shape.ranks + r + 1;
    EXPECT_EQ(pairs, 2 * main - (r == shape.ranks - 1 ? 1 : 0) + shape.ranks - r - 1) << "rank " << r;
  }
  // The same model cut into twice the stages (each action half the work) against 1F1B on the same
  // P ranks and M micro-batches: a shorter step.
  const auto dual = plannedTimeline(shape, {0.5, 1, 0.5, 0.5});
  const auto oneFOneB = plannedTimeline({PipelineSchedule::OneFOneB, shape.ranks, 1, shape.microBatches}, {1, 2, 1, 1});
  ASSERT_TRUE(dual && oneFOneB);
  double dualEnd = 0, oneFOneBEnd = 0;
  for (const auto& rank : *dual) dualEnd = std::max(dualEnd, rank.back().end);
  for (const auto& rank : *oneFOneB) oneFOneBEnd = std::max(oneFOneBEnd, rank.back().end);
  EXPECT_LT(dualEnd, oneFOneBEnd);
}

}  // namespace
}  // namespace shardscope::config
