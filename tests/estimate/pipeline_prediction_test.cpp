// The estimator's pipeline forms against real pipeline runs (one OS process per rank): each rank's
// model states, the micro-batches whose activations it holds at most and the bytes it sends to
// other stages, predicted, equal what the run measured; and the (pp, dp, tp) layouts of a GPU count.
#include "estimate/pipeline_prediction.h"

#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "config/model_layout.h"
#include "config/pipeline_config.h"
#include "tests/support/run_cli.h"

namespace shardscope::estimate {
namespace {

config::RunConfig pipelineRun(config::PipelineSchedule schedule) {
  config::RunConfig c;
  c.model = config::ModelKind::Gpt;
  c.layers = 4;
  c.hidden = 32;
  c.heads = 4;
  c.seq = 8;
  c.vocab = 64;
  c.batch = 8;
  c.world = 2;
  c.pp = 2;
  c.microbatches = 4;
  c.schedule = schedule;
  c.steps = 2;
  return c;
}

TEST(PipelinePrediction, EachStageHoldsItsBlocksTheEmbeddingFirstTheHeadLast) {
  const auto c = pipelineRun(config::PipelineSchedule::OneFOneB);
  const auto params = config::modelLayout(c);
  const auto stageOf = config::stageOfEachParameter(params, c.layers, config::pipelineShapeOf(c).stages());
  ASSERT_EQ(stageOf.size(), params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const int unit = params[i].unit;
    if (unit == config::kRootUnit) {
      const bool embedding = params[i].name.rfind("wte", 0) == 0 || params[i].name.rfind("wpe", 0) == 0;
      EXPECT_EQ(stageOf[i], embedding ? 0 : 1) << params[i].name;
    } else {
      EXPECT_EQ(stageOf[i], unit < 2 ? 0 : 1) << params[i].name;
    }
  }
}

TEST(PipelinePrediction, ARunMeasuresWhatTheScheduleHoldsAndSends) {
  for (auto schedule : {config::PipelineSchedule::GPipe, config::PipelineSchedule::OneFOneB}) {
    const auto c = pipelineRun(schedule);
    const auto predicted = predictPipeline(c);
    const auto dir = testing::freshTempDir("pp_prediction");
    const auto r = testing::runShardscope(testing::runArgsOf(c, {"--summary", dir + "/s.json"}));
    ASSERT_EQ(r.exitCode, 0) << r.output;
    const auto ranks = nlohmann::json::parse(std::ifstream(dir + "/s.json"))["ranks"];
    ASSERT_EQ(predicted.ranks.size(), 2u);
    for (int rank = 0; rank < 2; ++rank) {
      const auto& p = predicted.ranks[static_cast<size_t>(rank)];
      const auto& m = ranks[rank];
      EXPECT_EQ(p.peakMicroBatches, m["pipeline"]["microbatches_in_flight_peak"].get<int>()) << rank;
      EXPECT_EQ(p.peakMicroBatches, p.peakStageMicroBatches) << "one stage a rank";
      EXPECT_EQ(p.sentBytesPerStep, m["traffic_per_step"]["sent_bytes_by_group"]["pipe"].get<double>()) << rank;
      // ddp over a stage's one data rank, fp32 Adam: 16 bytes a parameter (the optimizer's state as it
      // stays between steps: its peak adds the update's temporaries, which no model-state form counts).
      const auto& peak = m["peak_bytes"];
      const int64_t states = peak["param_shard"].get<int64_t>() + peak["grad_full"].get<int64_t>() +
                             m["after_step_bytes"]["optimizer_state"].get<int64_t>();
      EXPECT_NEAR(static_cast<double>(p.modelStateBytes), static_cast<double>(states), 0.01 * states) << rank;
      EXPECT_EQ(p.modelStateBytes, 16 * p.parameters) << rank;
    }
    const int held = schedule == config::PipelineSchedule::GPipe ? 4 : 2;
    EXPECT_EQ(predicted.ranks[0].peakStageMicroBatches, held);
    EXPECT_GT(predicted.ranks[0].activationBytes, predicted.ranks[1].activationBytes / 4) << "sized per stage";
  }
}

TEST(PipelinePrediction, LayoutsTradeTheBubbleForMemory) {
  const auto layouts = predictLayouts(70e9, 2, 2, 12, 64, 8, 0);
  const auto find = [&](int pp, int tp) {
    for (const auto& l : layouts) {
      if (l.pp == pp && l.tp == tp) return l;
    }
    ADD_FAILURE() << "no layout pp " << pp << " tp " << tp;
    return LayoutPrediction{};
  };
  EXPECT_EQ(find(1, 1).dp, 64);
  EXPECT_EQ(find(8, 8).dp, 1);
  EXPECT_DOUBLE_EQ(find(1, 1).bubbleOverIdeal, 0);
  EXPECT_DOUBLE_EQ(find(8, 1).bubbleOverIdeal, 7.0 / 8);
  // full_shard divides everything by all 64 GPUs whatever the layout; ZeRO-1 keeps each slice's
  // weights and gradients whole, so more stages or a wider tp shrink it.
  EXPECT_DOUBLE_EQ(find(4, 2).fullShardBytes, 70e9 * 16 / 64);
  EXPECT_GT(find(1, 1).zero1Bytes, find(4, 1).zero1Bytes);
  EXPECT_GT(find(4, 1).zero1Bytes, find(4, 8).zero1Bytes);
  for (const auto& l : layouts) EXPECT_EQ(l.pp * l.dp * l.tp, 64);
}

}  // namespace
}  // namespace shardscope::estimate
