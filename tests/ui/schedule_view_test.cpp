// The Schedule tab over real pipeline runs (one OS process per rank): each rank's cells are its
// schedule's compute actions in order, the activations held climb to M under GPipe and stop at
// P - rank under 1F1B, every send is an arrow to the receive that took it, with its bytes.
#include "ui/schedule_view.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <fstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "config/pipeline_config.h"
#include "tests/support/pipeline_jobs.h"
#include "tests/support/run_cli.h"
#include "tests/ui/app_driver.h"
#include "ui/activation_split.h"
#include "ui/app_state.h"
#include "ui/headless_frame.h"
#include "ui/memory_at.h"
#include "ui/pipeline_lanes.h"
#include "ui/record_files.h"

namespace shardscope::ui {
namespace {

Session recordedPipeline(const std::string& schedule) {
  const std::string dir = testing::freshTempDir("schedule_view_" + schedule);
  const auto run = testing::runShardscope({"run",
                                           "--world",
                                           "2",
                                           "--pp",
                                           "2",
                                           "--schedule",
                                           schedule,
                                           "--model",
                                           "gpt",
                                           "--layers",
                                           "2",
                                           "--hidden",
                                           "16",
                                           "--seq",
                                           "8",
                                           "--batch",
                                           "8",
                                           "--microbatches",
                                           "4",
                                           "--steps",
                                           "3",
                                           "--trace",
                                           dir + "/run.pftrace"});
  EXPECT_EQ(run.exitCode, 0) << run.output;
  auto opened = openRecord({dir + "/run.pftrace"});
  EXPECT_TRUE(opened.error.empty()) << opened.error;
  return opened.sessions.empty() ? Session() : std::move(opened.sessions.front());
}

int mostHeld(const ScheduleRow& row) {
  int most = 0;
  for (const auto& [when, held] : row.held) most = std::max(most, held);
  return most;
}

TEST(ScheduleView, EachRankDrawsItsScheduleAgainstItsRun) {
  for (const std::string schedule : {"gpipe", "1f1b"}) {
    const Session s = recordedPipeline(schedule);
    const ScheduleFrame f = scheduleFrame(s, -1e18);  // the playhead before the run: the last step
    ASSERT_TRUE(f.error.empty()) << f.error;
    EXPECT_EQ(f.step, 2) << schedule;
    ASSERT_EQ(f.rows.size(), 2u);
    const auto shape = config::pipelineShapeOf(s.config);
    for (int r = 0; r < 2; ++r) {
      const ScheduleRow& row = f.rows[static_cast<size_t>(r)];
      EXPECT_EQ(row.rank, r);
      const auto planned = config::computeActions(shape, r);
      ASSERT_EQ(row.measured.size(), planned.size()) << schedule << " rank " << r;
      ASSERT_EQ(row.planned.size(), planned.size()) << schedule << " rank " << r;
      for (size_t i = 0; i < planned.size(); ++i) {
        EXPECT_EQ(row.measured[i].action, planned[i]) << schedule << " rank " << r << " #" << i;
        EXPECT_GT(row.measured[i].end, row.measured[i].begin);
        if (i > 0) EXPECT_GE(row.measured[i].begin, row.measured[i - 1].end) << "one action at a time";
      }
      EXPECT_EQ(mostHeld(row), schedule == "gpipe" ? 4 : 2 - r) << schedule << " rank " << r;
      EXPECT_GT(row.bubbleSeconds, 0);
      EXPECT_GT(row.plannedBubbleSeconds, 0);
    }
    // Rank 0 sends each micro-batch's activations down, rank 1 each gradient up.
    ASSERT_EQ(f.arrows.size(), 8u) << schedule;
    for (const auto& a : f.arrows) {
      EXPECT_NE(a.fromRow, a.toRow);
      EXPECT_GE(a.received, a.sent) << a.label;
      EXPECT_EQ(a.bytes, 2 * 8 * 16 * 4) << a.label << ": 2 samples x seq 8 x hidden 16, fp32";
    }
    EXPECT_GT(f.plannedSeconds, 0);
    EXPECT_LE(f.plannedSeconds, f.seconds) << "the plan waits for nothing";
    EXPECT_EQ(f.closedForm, "(P-1)/M");

    ScheduleViewState state;
    HeadlessImGui imgui(1600, 900);
    const std::vector<Session> sessions{s};
    const std::vector<PipelineLanes> lanes{pipelineLanesOf(s)};
    const int vertices = imgui.frame([&] { drawScheduleTab(state, sessions, lanes, 1, 0); });
    EXPECT_EQ(state.session, 0);
    EXPECT_GT(vertices, 1000) << "cells, hatching and arrows";
  }
}

// The timeline's own lanes over the whole run: every step climbs to M under GPipe and stops at
// P - rank under 1F1B, back to none at each step's end; both drawn on one scale in the window.
TEST(ScheduleView, TheTimelinesHeldLanesClimbToMUnderGPipeAndStopAtPUnder1F1B) {
  SessionStore store;
  {
    auto lock = store.lock();
    store.add(recordedPipeline("gpipe"));
    store.add(recordedPipeline("1f1b"));
  }
  for (size_t i = 0; i < 2; ++i) {
    const PipelineLanes lanes = pipelineLanesOf(store.sessions()[i]);
    ASSERT_EQ(lanes.held.size(), 2u);
    for (int r = 0; r < 2; ++r) {
      const auto& held = lanes.held[static_cast<size_t>(r)];
      ASSERT_EQ(held.size(), 3u * 8) << "4 F and 4 B a step";
      int most = 0;
      for (const auto& h : held) most = std::max(most, h.microBatches);
      EXPECT_EQ(most, i == 0 ? 4 : 2 - r) << (i == 0 ? "gpipe" : "1f1b") << ", rank " << r;
      for (size_t step = 0; step < 3; ++step) {
        EXPECT_EQ(held[8 * step + 7].microBatches, 0) << "step " << step << " frees every micro-batch it held";
      }
      // Each micro-batch apart: the ones held, each with what its forward left held (the allocator's).
      for (const auto& h : held) {
        ASSERT_EQ(h.batches.size(), static_cast<size_t>(h.microBatches));
        for (const auto& b : h.batches) EXPECT_GT(b.bytes, 0) << "micro-batch " << b.microBatch;
      }
      // GPipe's first backward frees micro-batch 0 first; 1F1B's rank 0 holds micro-batches 0 and
      // 1 before its first backward, then 1 alone.
      const auto batchesAt = [&](size_t k) {
        std::vector<int> out;
        for (const auto& b : held[k].batches) out.push_back(b.microBatch);
        return out;
      };
      if (i == 0) EXPECT_EQ(batchesAt(4), (std::vector<int>{1, 2, 3}));
      if (i == 1 && r == 0) {
        EXPECT_EQ(batchesAt(1), (std::vector<int>{0, 1}));
        EXPECT_EQ(batchesAt(2), (std::vector<int>{1}));
      }
      EXPECT_EQ(lanes.actions[static_cast<size_t>(r)].size(), 3u * (2 * 4 + 2 * 4))
          << "per step 4 F and 4 B, and a transfer beside each";
    }
  }
  AppState state;
  auto app = AppDriver::viewOnly(store, state);
  app->draw();
  ASSERT_EQ(state.pipelineLanes.size(), 2u);
  EXPECT_EQ(state.pipelineLanes[0].scale, 4);
  EXPECT_EQ(state.pipelineLanes[1].scale, 4) << "1F1B's lanes on GPipe's scale, to compare their heights";
  EXPECT_GT(state.lastStats.actionCells, 0);
  EXPECT_GT(state.lastStats.heldSteps, 0);
  // Who holds what at GPipe's first backward of step 1: every micro-batch's activations held.
  const auto& gpipeRank0 = state.pipelineLanes[0].actions[0];
  const auto firstBackward = std::find_if(gpipeRank0.begin(), gpipeRank0.end(), [](const stats::MeasuredAction& a) {
    return a.step == 1 && a.action.kind == config::PipeActionKind::Backward;
  });
  ASSERT_NE(firstBackward, gpipeRank0.end());
  EXPECT_EQ(stats::activationsHeldAt(gpipeRank0, firstBackward->beginNs).size(), 4u);
  EXPECT_EQ(stats::activationsHeldAt(gpipeRank0, firstBackward->endNs).size(), 3u) << "its micro-batch freed";
  state.openTab = bottomTabTitle("holdings");
  state.playhead.session = 0;
  state.pendingAt = "0B0@1";
  for (int i = 0; i < 3; ++i) app->draw();
  ASSERT_EQ(state.shownTab, "holdings");
  EXPECT_EQ(state.lastHoldings.heldCells, 2) << "a micro-batches-held cell per rank";
  // The Memory tab there: each rank's activations split by micro-batch; rank 0 holds all four.
  state.openTab = bottomTabTitle("memory");
  for (int i = 0; i < 3; ++i) app->draw();
  ASSERT_EQ(state.shownTab, "memory");
  ASSERT_EQ(state.lastActivationSplits.size(), 2u);
  const std::string& text = state.lastActivationSplits[0];
  for (const char* mb : {"mb0 ", "mb1 ", "mb2 ", "mb3 "}) EXPECT_NE(text.find(mb), std::string::npos) << text;
  const auto& rec = store.sessions()[0].recording;
  const auto held = stats::activationBytesHeldAt(rec.rank(0), gpipeRank0, firstBackward->beginNs);
  ASSERT_EQ(held.size(), 4u);
  const double fromOrigin = static_cast<double>(firstBackward->beginNs - rec.originNs());
  const auto activation = memoryAt(rec, 0, fromOrigin)[static_cast<size_t>(trace::MemoryRole::Activation)];
  EXPECT_EQ(activationSplitText(held, activation), text) << "the split at the playhead, the first backward's start";
  int64_t heldBytes = 0;
  for (const auto& [key, bytes] : held) heldBytes += bytes;
  EXPECT_LE(heldBytes, activation) << "what the micro-batches hold is part of the role's bytes";
}

// Ranks that share one GPU (as on the device machine, 2 ranks on its one GPU): the tab says that a
// rank's idle time holds the others' kernels, where the plan gives each stage a device; CPU ranks
// get no such note.
TEST(ScheduleView, RanksSharingOneGpuAreSaidToBeMeasuredSo) {
  Session s = recordedPipeline("1f1b");
  EXPECT_EQ(scheduleFrame(s, -1e18).sharedDevice, "") << s.device;
  s.device = "cuda:0 / nccl / cuda:0, 2 ranks on one GPU (NCCL_MULTI_RANK_GPU_ENABLE=1, NCCL 2.30.7) / cores 1";
  const ScheduleFrame f = scheduleFrame(s, -1e18);
  EXPECT_EQ(f.sharedDevice.rfind("These ranks share one GPU (2 ranks on one GPU (NCCL_MULTI_RANK_GPU_ENABLE=1, "
                                 "NCCL 2.30.7)): ",
                                 0),
            0u)
      << f.sharedDevice;
  EXPECT_NE(f.sharedDevice.find("a device for each stage"), std::string::npos) << f.sharedDevice;
}

// The names PyTorch's runtime gave rank `rank`'s last `count` sends ("PP:0SEND_F1" around each),
// in order, as the tab labels a transfer.
std::vector<std::string> runtimeSendLabels(const std::string& dir, int rank, size_t count) {
  std::ifstream in(dir + "/rank-" + std::to_string(rank) + ".pt.trace.json");
  const auto trace = nlohmann::json::parse(in);
  std::vector<std::pair<double, std::string>> sends;
  for (const auto& e : trace["traceEvents"]) {
    const std::string name = e.value("name", "");
    if (name.rfind("PP:", 0) != 0 || name.find("SEND_") == std::string::npos) continue;
    const auto action = config::parseActionText(name.substr(3));
    if (action) sends.emplace_back(e["ts"].get<double>(), config::transferLabel(*action));
  }
  std::sort(sends.begin(), sends.end());
  std::vector<std::string> out;
  for (size_t i = sends.size() > count ? sends.size() - count : 0; i < sends.size(); ++i)
    out.push_back(sends[i].second);
  return out;
}

// PyTorch jobs' own traces (tests/data/pytorch_pipelining_gloo), whose schedules name no transfer
// (GPipe, 1F1B) or name them in spans the tab does not read (the runtime's PP:0SEND_F1): every send
// an arrow to the receive that took it, named by the order the ranks ran things in. Each arrow goes
// after the computation whose output it carried and arrives before the one that needed it; where
// the runtime named its sends, each rank's arrows are named as it named them, in the same order.
TEST(ScheduleView, APyTorchJobsSendsAreArrowsToTheReceivesThatTookThem) {
  // Two ranks, M = 4: each micro-batch crosses between them once each way (P = 2), three times
  // (interleaved, stages 0 to 3 alternating) or twice (the V: the turn stays on rank 1). The last
  // step of 1f1b_eval holds an evaluation's forwards, sends and receives before its training's.
  const std::vector<std::pair<std::string, size_t>> jobs = {
      {"gpipe", 8}, {"1f1b", 8}, {"1f1b_eval", 8}, {"interleaved_1f1b", 24}, {"dualpipev", 16}};
  for (const auto& [job, arrows] : jobs) {
    SCOPED_TRACE(job);
    const std::string dir = std::string(SHARDSCOPE_TEST_DATA) + "/pytorch_pipelining_gloo/" + job;
    auto opened = openRecord({dir});
    ASSERT_TRUE(opened.error.empty()) << opened.error;
    const ScheduleFrame f = scheduleFrame(opened.sessions.front(), -1e18);
    ASSERT_TRUE(f.error.empty()) << f.error;
    EXPECT_TRUE(f.arrowsFromSends);
    EXPECT_EQ(f.unpairedSends, 0);
    ASSERT_EQ(f.arrows.size(), arrows);
    std::vector<std::vector<std::pair<double, std::string>>> sentBy(f.rows.size());
    for (const auto& a : f.arrows) {
      ASSERT_NE(a.fromRow, a.toRow) << a.label;
      EXPECT_GE(a.received, a.sent) << a.label;
      sentBy[static_cast<size_t>(a.fromRow)].emplace_back(a.sent, a.label);
      const bool gradient = config::carriesGradient(a.transfer);
      const int to = a.transfer.stage + (gradient ? -1 : 1);
      // The computation that made it, on the sender, and the one that needed it, on the receiver.
      for (const auto& [row, stage, producing] :
           {std::tuple{a.fromRow, a.transfer.stage, true}, std::tuple{a.toRow, to, false}}) {
        int found = 0;
        const auto& cells = f.rows[static_cast<size_t>(row)].measured;
        for (size_t i = 0; i < cells.size(); ++i) {
          const ScheduleCell& cell = cells[i];
          const auto kind = cell.action.kind;
          const bool backward =
              kind == config::PipeActionKind::Backward || kind == config::PipeActionKind::BackwardInput;
          if ((gradient ? !backward : kind != config::PipeActionKind::Forward) || cell.action.stage != stage ||
              cell.action.microBatch != a.transfer.microBatch)
            continue;
          ++found;
          if (producing) EXPECT_LE(cell.end, a.sent + 1e-9) << a.label << ": sent before its output was made";
          // It may start before its input arrives (PyTorch's runtime waits for a receive inside the
          // action that needs it), but cannot be done: the rank's next computation begins after.
          const double next = i + 1 < cells.size() ? cells[i + 1].begin : f.seconds;
          if (!producing) EXPECT_GE(next, a.received - 1e-9) << a.label << ": done before it arrived";
        }
        EXPECT_EQ(found, 1) << a.label << (producing ? ": the computation that made it" : ": the one that needed it");
      }
    }
    if (job != "interleaved_1f1b" && job != "dualpipev") continue;
    for (size_t row = 0; row < sentBy.size(); ++row) {
      std::sort(sentBy[row].begin(), sentBy[row].end());
      std::vector<std::string> ours;
      for (const auto& [when, label] : sentBy[row]) ours.push_back(label);
      EXPECT_EQ(ours, runtimeSendLabels(dir, f.rows[row].rank, ours.size())) << "rank " << f.rows[row].rank;
    }
    // Each lands where the receive the runtime named for it ("1RECV_F0") completed.
    for (const auto& a : f.arrows) {
      const bool gradient = config::carriesGradient(a.transfer);
      const config::PipeAction took{
          gradient ? config::PipeActionKind::RecvGradient : config::PipeActionKind::RecvActivation,
          a.transfer.stage + (gradient ? -1 : 1), a.transfer.microBatch};
      const auto& receiver = opened.sessions.front().recording.rank(f.rows[static_cast<size_t>(a.toRow)].rank);
      int landed = 0;
      for (const auto& c : receiver.collectives) {
        const double end = static_cast<double>(c.endNs - f.stepBeginNs) / 1e9;
        landed += c.step == f.step && trace::collectiveUnit(c).rfind(config::actionText(took) + ", ", 0) == 0 &&
                  std::abs(end - a.received) < 1e-9;
      }
      EXPECT_EQ(landed, 1) << a.label << " taken by " << config::actionText(took);
    }
  }
}

// The 1F1B job with one more receive on rank 1 after its schedule's last send of the last step (a
// job's own, a metric say): in order it would take the place of the first micro-batch's, and every
// activation's arrow would land one receive late. Those are left out and counted instead; the
// gradients' arrows, rank 1's own sends, are still drawn.
TEST(ScheduleView, AJobsOwnReceiveDoesNotShiftTheMicroBatchesArrows) {
  const std::string from = std::string(SHARDSCOPE_TEST_DATA) + "/pytorch_pipelining_gloo/1f1b";
  const std::string dir = testing::freshTempDir("schedule_extra_recv");
  std::filesystem::copy_file(from + "/rank-0.pt.trace.json", dir + "/rank-0.pt.trace.json");
  std::ifstream in(from + "/rank-1.pt.trace.json");
  auto trace = nlohmann::json::parse(in);
  nlohmann::json lastSend, lastRecv, optimizer;  // the step's last send, a receive to copy, its optimizer step
  for (const auto& e : trace["traceEvents"]) {
    const std::string name = e.value("name", "");
    if (name == "c10d::send" && (lastSend.is_null() || e["ts"] > lastSend["ts"])) lastSend = e;
    if (name == "c10d::recv_") lastRecv = e;
    if (name.rfind("Optimizer.step", 0) == 0 && (optimizer.is_null() || e["ts"] > optimizer["ts"])) optimizer = e;
  }
  ASSERT_FALSE(lastSend.is_null() || lastRecv.is_null() || optimizer.is_null());
  const double after = lastSend["ts"].get<double>() + lastSend["dur"].get<double>();
  ASSERT_LT(after + 60, optimizer["ts"].get<double>()) << "room before the optimizer step";
  lastRecv["ts"] = after + 20;
  lastRecv["dur"] = 30;
  lastRecv["args"]["External id"] = 999999;
  trace["traceEvents"].push_back(lastRecv);
  std::ofstream(dir + "/rank-1.pt.trace.json") << trace.dump();

  auto opened = openRecord({dir});
  ASSERT_TRUE(opened.error.empty()) << opened.error;
  const ScheduleFrame f = scheduleFrame(opened.sessions.front(), -1e18);
  ASSERT_TRUE(f.error.empty()) << f.error;
  ASSERT_EQ(f.step, 1) << "the last step, the one with the extra receive";
  EXPECT_EQ(f.unpairedSends, 4) << "rank 0's activations, which rank 1's receives no longer pair in order";
  ASSERT_EQ(f.arrows.size(), 4u);
  for (const auto& a : f.arrows) {
    EXPECT_TRUE(config::carriesGradient(a.transfer)) << a.label;
    EXPECT_EQ(f.rows[static_cast<size_t>(a.fromRow)].rank, 1) << a.label;
  }
}

// A (pp, dp) job, torchtitan's mesh: two replicas of the 1F1B job's stages (ranks 0 and 1 stage 0,
// 2 and 3 stage 1). Each replica's sends go to its own replica of the other stage, never across.
TEST(ScheduleView, APyTorchJobsArrowsStayInTheirReplicaOfThePipeline) {
  auto opened = openRecord(
      {testing::fourRanksWithPipelineGroups("schedule_pp_dp", {0, 0, 1, 1}, {{0, 2}, {1, 3}, {0, 2}, {1, 3}})});
  ASSERT_TRUE(opened.error.empty()) << opened.error;
  const ScheduleFrame f = scheduleFrame(opened.sessions.front(), -1e18);
  ASSERT_TRUE(f.error.empty()) << f.error;
  EXPECT_EQ(f.unpairedSends, 0);
  ASSERT_EQ(f.arrows.size(), 16u) << "each replica's 4 micro-batches, down and back";
  std::map<std::pair<int, int>, int> between;  // (from rank, to rank) -> arrows
  for (const auto& a : f.arrows) {
    ++between[{f.rows[static_cast<size_t>(a.fromRow)].rank, f.rows[static_cast<size_t>(a.toRow)].rank}];
  }
  const std::map<std::pair<int, int>, int> expected = {{{0, 2}, 4}, {{2, 0}, 4}, {{1, 3}, 4}, {{3, 1}, 4}};
  EXPECT_EQ(between, expected);
}

TEST(ScheduleView, ASessionWithoutAPipelineSaysHowToGetOne) {
  Session plain;
  plain.config.pp = 1;
  EXPECT_NE(scheduleFrame(plain, 0).error.find("--pp 2"), std::string::npos);
}

}  // namespace
}  // namespace shardscope::ui

namespace shardscope::ui {
namespace {

// Each micro-batch's activations, measured by the allocator over its forwards, kept apart: the same
// bytes a micro-batch under GPipe and 1F1B (the schedule changes how many are held, not what each
// holds), on every rank and micro-batch; GPipe's activation peak on rank 0 holds all four, 1F1B's
// fewer; who holds what's cell sums the held ones' bytes.
TEST(ScheduleView, EachMicroBatchsActivationsAreTheSameBytesUnderEitherSchedule) {
  const Session gpipe = recordedPipeline("gpipe");
  const Session oneFOneB = recordedPipeline("1f1b");
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const auto& g = gpipe.recording.rank(r);
    const auto& o = oneFOneB.recording.rank(r);
    const auto gBytes = stats::activationBytesByMicroBatch(g, stats::measuredActions(g));
    const auto oBytes = stats::activationBytesByMicroBatch(o, stats::measuredActions(o));
    ASSERT_EQ(gBytes.size(), 4u);
    ASSERT_EQ(oBytes.size(), 4u);
    for (size_t mb = 0; mb < 4; ++mb) {
      EXPECT_GT(gBytes[mb], 0) << "micro-batch " << mb;
      EXPECT_NEAR(oBytes[mb], gBytes[mb], 0.05 * gBytes[mb]) << "micro-batch " << mb;
      EXPECT_NEAR(gBytes[mb], gBytes[0], 0.05 * gBytes[0]) << "micro-batches of one size hold alike";
    }
    if (r == 0) {
      const auto activation = static_cast<size_t>(trace::MemoryRole::Activation);
      const double four = gBytes[0] + gBytes[1] + gBytes[2] + gBytes[3];
      EXPECT_GE(static_cast<double>(g.peakByRole[activation]), 0.95 * four) << "GPipe holds all four at once";
      EXPECT_LT(o.peakByRole[activation], g.peakByRole[activation]) << "1F1B holds fewer";
    }
  }
  // At GPipe's first backward of its second step rank 0 holds all four; the cell's bytes are theirs.
  const auto actions = stats::measuredActions(gpipe.recording.rank(0));
  const auto firstBackward = std::find_if(actions.begin(), actions.end(), [](const stats::MeasuredAction& a) {
    return a.step == 1 && a.action.kind == config::PipeActionKind::Backward;
  });
  ASSERT_NE(firstBackward, actions.end());
  const auto held = stats::activationBytesHeldAt(gpipe.recording.rank(0), actions, firstBackward->beginNs);
  ASSERT_EQ(held.size(), 4u);
  for (const auto& [key, bytes] : held) EXPECT_GT(bytes, 0) << "micro-batch " << key.second;
}

}  // namespace
}  // namespace shardscope::ui
