// Pipeline parallelism (--pp): a pipeline changes no mathematics, so every schedule trains as one
// process does on the whole batch, at P = 2 and 3, with a data dimension under each kind of
// strategy, with --tp inside the stages, and with odd sizes. Runs the real binary: one OS process
// per rank, activations and gradients between stages by Gloo's send and recv.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/recording/tensor_files.h"
#include "engine/strategies/reference_trainer.h"
#include "config/pipeline_config.h"
#include "config/pipeline_transfers.h"
#include "stats/pipeline_actions.h"
#include "stats/summary_reader.h"
#include "trace/perfetto_reader.h"
#include "tests/support/mode_of.h"
#include "tests/support/run_cli.h"

namespace shardscope::engine {
namespace {

struct PipelineCase {
  std::string name;
  std::string model;
  std::string schedule;
  int world, pp, tp, stagesPerRank, microbatches;
  std::string strategy;
};

config::RunConfig caseConfig(const PipelineCase& p) {
  config::RunConfig c;
  c.model = testing::modeOf<config::ModelKind>(p.model);
  c.layers = std::max(5, p.pp * p.stagesPerRank + 1);  // odd: the stages' shares differ
  c.hidden = 12;
  c.heads = p.tp == 2 ? 6 : 3;
  c.seq = 5;
  c.vocab = 11;
  c.features = 7;
  c.classes = 5;
  c.steps = 3;
  c.optimizer = config::OptimizerKind::Sgd;  // moves by the gradient's scale: a missing 1/M shows
  c.lr = 0.5;
  c.seed = 5;
  return c;
}

// The GPT on 2 ranks of one stage each (V more where the schedule loops), 4 micro-batches, 3 steps.
config::RunConfig twoStagesOfGpt(config::PipelineSchedule schedule) {
  config::RunConfig c = caseConfig({"two_stages", "gpt", "", 2, 2, 1, 1, 4, "ddp"});
  c.world = 2;
  c.pp = 2;
  c.microbatches = 4;
  c.batch = 8;
  c.steps = 3;
  c.schedule = schedule;
  return c;
}

class PipelineParity : public ::testing::TestWithParam<PipelineCase> {};

TEST_P(PipelineParity, TrainsAsOneProcessOnTheWholeBatch) {
  const PipelineCase& p = GetParam();
  config::RunConfig c = caseConfig(p);
  const int dataRanks = p.world / p.pp / p.tp;
  c.batch = 2 * p.microbatches * dataRanks;
  const ReferenceResult ref = trainSingleProcess(c);
  c.world = p.world;
  c.pp = p.pp;
  c.tp = p.tp;
  c.schedule = testing::modeOf<config::PipelineSchedule>(p.schedule);
  c.stagesPerRank = p.stagesPerRank;
  c.microbatches = p.microbatches;
  c.strategy = testing::modeOf<config::StrategyKind>(p.strategy);
  const std::string dir = testing::freshTempDir("pp_" + p.name);
  auto run = testing::runShardscope(testing::runArgsOf(c, {"--export", dir, "--summary", dir + "/summary.json"}));
  ASSERT_EQ(run.exitCode, 0) << run.output;
  auto losses = loadTensor(dir + "/losses.pt");
  for (int s = 0; s < c.steps; ++s) {
    EXPECT_NEAR(losses[s].item<double>(), ref.losses[s], 1e-5 * std::abs(ref.losses[s])) << "step " << s;
  }
  EXPECT_GT(std::abs(ref.losses[2] - ref.losses[0]), 1e-4) << "the reference did not train";
  // final.pt: the whole model, each stage's part from its ranks, as one process trained it.
  auto trained = loadTensorDict(dir + "/final.pt");
  EXPECT_EQ(trained.size(), ref.parameters.size());
  for (const auto& [name, expected] : ref.parameters) {
    if (!trained.count(name)) {
      ADD_FAILURE() << name << " is not in final.pt";
      continue;
    }
    const double scale = std::max(expected.abs().max().item<double>(), 1e-12);
    EXPECT_LE((trained[name] - expected).abs().max().item<double>() / scale, 1e-5) << name;
  }
  std::ifstream in(dir + "/summary.json");
  const auto summary = nlohmann::json::parse(in);
  EXPECT_EQ(summary["pipeline"]["schedule"], p.schedule);
  EXPECT_EQ(summary["pipeline"]["microbatches"], p.microbatches);
  for (const auto& rank : summary["ranks"]) {
    const auto& pipeline = rank["pipeline"];
    ASSERT_TRUE(pipeline.is_object()) << rank["rank"];
    EXPECT_EQ(static_cast<int>(pipeline["stages"].size()), p.stagesPerRank) << rank["rank"];
    const auto& byGroup = rank["traffic_per_step"]["sent_bytes_by_group"];
    EXPECT_GT(byGroup["pipe"].get<double>(), 0) << rank["rank"];
    // Every stage receives (activations, or the first stage its gradients), counted as it arrives.
    EXPECT_GT(rank["collectives"]["recv"]["received_bytes"].get<double>(), 0) << rank["rank"];
    if (p.strategy == "hybrid_shard") {  // HSDP inside each stage: its shard and replicate groups carried bytes
      EXPECT_GT(byGroup["shard"].get<double>(), 0) << rank["rank"];
      EXPECT_GT(byGroup["replicate"].get<double>(), 0) << rank["rank"];
    }
    const double share = pipeline["bubble_share"].get<double>();
    EXPECT_GT(share, 0) << "a pipeline rank always waits somewhere";
    EXPECT_LT(share, 1);
  }
}

// The activations a rank holds: GPipe's every micro-batch, 1F1B's P - r on pipeline rank r.
TEST(Pipeline, GPipeHoldsEveryMicroBatch1F1BAtMostPMinusRank) {
  for (const std::string schedule : {"gpipe", "1f1b", "zbv"}) {
    config::RunConfig c = caseConfig({"in_flight", "gpt", schedule, 3, 3, 1, 1, 6, "ddp"});
    c.world = 3;
    c.pp = 3;
    c.microbatches = 6;
    c.batch = 12;
    c.steps = 3;   // the peak must not grow with the steps
    c.layers = 6;  // zbv's 6 stages at P = 3
    c.schedule = testing::modeOf<config::PipelineSchedule>(schedule);
    const std::string dir = testing::freshTempDir("pp_in_flight_" + schedule);
    auto run = testing::runShardscope(testing::runArgsOf(c, {"--summary", dir + "/summary.json"}));
    ASSERT_EQ(run.exitCode, 0) << run.output;
    std::ifstream in(dir + "/summary.json");
    const auto summary = nlohmann::json::parse(in);
    for (const auto& rank : summary["ranks"]) {
      const int r = rank["rank"];
      const int held = rank["pipeline"]["microbatches_in_flight_peak"];
      // zbv: its rank 0 holds the first stage and the last (the root twice); at most every micro-batch.
      if (schedule == "zbv") {
        EXPECT_GE(held, 1) << "rank " << r;
        EXPECT_LE(held, 6) << "rank " << r;
        continue;
      }
      EXPECT_EQ(held, schedule == "gpipe" ? 6 : 3 - r) << schedule << " rank " << r;
    }
    EXPECT_NE(run.output.find("micro-batches held"), std::string::npos) << run.output;
    // The summary reads back with the same figures (view --summary, the app's summary sessions).
    const auto loaded = stats::loadSummary(dir + "/summary.json");
    ASSERT_EQ(loaded.runs.size(), 1u) << loaded.error;
    for (const auto& rank : loaded.runs[0].ranks) {
      if (schedule != "zbv") EXPECT_EQ(rank.pipelineStages, (std::vector<int>{rank.rank})) << rank.rank;
      if (schedule != "zbv") EXPECT_EQ(rank.peakMicroBatchesInFlight, schedule == "gpipe" ? 6 : 3 - rank.rank);
      EXPECT_GT(rank.bubbleShare, 0) << rank.rank;
    }
  }
}

// Each rank's actions read back from its trace are the schedule's, in its order, every step; the
// compute ones took compute time, and the plan laid out with their means has a bubble.
TEST(Pipeline, TheRecordedActionsAreTheSchedules) {
  config::RunConfig c = twoStagesOfGpt(config::PipelineSchedule::ZeroBubble);
  c.stagesPerRank = 2;
  c.layers = 4;
  const std::string dir = testing::freshTempDir("pp_actions");
  auto run = testing::runShardscope(testing::runArgsOf(c, {"--trace", dir + "/run.pftrace"}));
  ASSERT_EQ(run.exitCode, 0) << run.output;
  const auto loaded = trace::loadPerfettoTrace(dir + "/run.pftrace");
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  const auto shape = config::pipelineShapeOf(c);
  std::vector<std::vector<stats::MeasuredAction>> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.push_back(stats::measuredActions(loaded.recording.rank(r)));
    const auto planned = config::rankActions(shape, r);
    ASSERT_EQ(ranks[r].size(), planned.size() * c.steps) << "rank " << r;
    for (size_t i = 0; i < ranks[r].size(); ++i) {
      const auto& got = ranks[r][i];
      EXPECT_EQ(got.action, planned[i % planned.size()]) << "rank " << r << ": " << config::actionText(got.action);
      EXPECT_EQ(got.step, static_cast<int>(i / planned.size())) << "rank " << r;
      EXPECT_LE(got.computeNs, got.endNs - got.beginNs);
      if (config::isComputeAction(got.action.kind)) EXPECT_GT(got.computeNs, 0) << config::actionText(got.action);
    }
  }
  const auto durations = stats::meanActionSeconds(ranks);
  ASSERT_TRUE(durations);
  EXPECT_GT(durations->forward, 0);
  EXPECT_GT(durations->backwardInput, 0);
  EXPECT_GT(durations->backwardWeight, 0);
  const auto plan = config::plannedTimeline(shape, *durations);
  ASSERT_TRUE(plan);
  const auto bubbles = stats::plannedBubbles(*plan);
  ASSERT_EQ(bubbles.size(), 2u);
  for (const auto& b : bubbles) EXPECT_GT(b.share, 0);
}

// A slow stage is named as the one the others wait for; a stage that stops is named as the one that
// never sent what its neighbour waits in.
TEST(Pipeline, ASlowStageAndAStageThatNeverSendsAreNamed) {
  config::RunConfig c = twoStagesOfGpt(config::PipelineSchedule::OneFOneB);
  c.slowRank = "0:4";
  auto slow = testing::runShardscope(testing::runArgsOf(c));
  ASSERT_EQ(slow.exitCode, 0) << slow.output;
  EXPECT_NE(slow.output.find("busiest: rank 0"), std::string::npos) << slow.output;
  c.slowRank = "";
  c.hangRank = "1:2";
  c.collectiveTimeoutS = 3;
  auto hung = testing::runShardscope(testing::runArgsOf(c));
  EXPECT_NE(hung.exitCode, 0);
  EXPECT_NE(hung.output.find("rank 0 waits in recv B mb0 stage1->0"), std::string::npos) << hung.output;
  EXPECT_NE(hung.output.find("which rank 1 never sent"), std::string::npos) << hung.output;
}

std::string caseName(const ::testing::TestParamInfo<PipelineCase>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(
    Schedules, PipelineParity,
    ::testing::Values(PipelineCase{"gpt_gpipe_p2", "gpt", "gpipe", 2, 2, 1, 1, 4, "ddp"},
                      PipelineCase{"gpt_1f1b_p3", "gpt", "1f1b", 3, 3, 1, 1, 3, "ddp"},
                      PipelineCase{"mlp_1f1b_p2", "mlp", "1f1b", 2, 2, 1, 1, 2, "ddp"},
                      PipelineCase{"gpt_interleaved_p2", "gpt", "interleaved_1f1b", 2, 2, 1, 2, 4, "ddp"},
                      PipelineCase{"gpt_zero_bubble_p2", "gpt", "zero_bubble", 2, 2, 1, 2, 4, "ddp"},
                      PipelineCase{"gpt_zbv_p2", "gpt", "zbv", 2, 2, 1, 2, 4, "ddp"},
                      PipelineCase{"gpt_zbv_p2_dp2_full_shard", "gpt", "zbv", 4, 2, 1, 2, 4, "full_shard"},
                      PipelineCase{"gpt_dualpipev_p2", "gpt", "dualpipev", 2, 2, 1, 2, 5, "ddp"},
                      PipelineCase{"gpt_dualpipev_p2_dp2_full_shard", "gpt", "dualpipev", 4, 2, 1, 2, 4, "full_shard"},
                      PipelineCase{"gpt_1f1b_p2_dp2_full_shard", "gpt", "1f1b", 4, 2, 1, 1, 2, "full_shard"},
                      PipelineCase{"gpt_gpipe_p2_dp2_zero1", "gpt", "gpipe", 4, 2, 1, 1, 2, "zero1"},
                      PipelineCase{"gpt_1f1b_p2_dp3_shard_grad_op", "gpt", "1f1b", 6, 2, 1, 1, 2, "shard_grad_op"},
                      PipelineCase{"gpt_1f1b_p2_dp4_hybrid_shard", "gpt", "1f1b", 8, 2, 1, 1, 2, "hybrid_shard"},
                      PipelineCase{"gpt_1f1b_p2_tp2", "gpt", "1f1b", 4, 2, 2, 1, 2, "full_shard"},
                      // Every schedule at P = 3 (7 blocks where V = 2), with odd micro-batch counts
                      PipelineCase{"gpt_gpipe_p3", "gpt", "gpipe", 3, 3, 1, 1, 5, "ddp"},
                      PipelineCase{"gpt_interleaved_p3", "gpt", "interleaved_1f1b", 3, 3, 1, 2, 3, "ddp"},
                      PipelineCase{"gpt_zero_bubble_p3", "gpt", "zero_bubble", 3, 3, 1, 2, 3, "ddp"},
                      PipelineCase{"gpt_zbv_p3", "gpt", "zbv", 3, 3, 1, 2, 5, "ddp"},
                      PipelineCase{"gpt_dualpipev_p3", "gpt", "dualpipev", 3, 3, 1, 2, 7, "ddp"},
                      // and the looped ones with a data dimension and with --tp
                      PipelineCase{"gpt_interleaved_p2_dp2_full_shard", "gpt", "interleaved_1f1b", 4, 2, 1, 2, 4,
                                   "full_shard"},
                      PipelineCase{"gpt_zero_bubble_p2_dp2_ddp", "gpt", "zero_bubble", 4, 2, 1, 2, 4, "ddp"},
                      PipelineCase{"gpt_interleaved_p2_tp2", "gpt", "interleaved_1f1b", 4, 2, 2, 2, 4, "full_shard"},
                      PipelineCase{"gpt_dualpipev_p2_tp2", "gpt", "dualpipev", 4, 2, 2, 2, 4, "ddp"}),
    caseName);

}  // namespace
}  // namespace shardscope::engine
