// The app's tabs driven as a user drives them: the whole app frame is built and the mouse clicks
// a tab and then its buttons where ImGui drew them. Export: the files appear on disk. Estimate:
// the seed documents' examples are one click away, and bad input is drawn as a message.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include "estimate/activation_memory.h"
#include "tests/support/run_cli.h"
#include "tests/ui/app_driver.h"
#include "config/view_tabs.h"
#include "ui/app_window.h"
#include "ui/bottom_tabs.h"
#include "ui/headless_frame.h"
#include "ui/item_probe.h"
#include "ui/record_files.h"
#include "ui/synthetic_recording.h"
#include "ui/theme.h"
#include "tests/support/mode_of.h"

namespace shardscope::ui {
namespace {

// Stands in for the engine: records what the window asked of it.
class RecordingEngine : public EngineControl {
 public:
  void startRun(const config::RunConfig&) override { ++runs; }
  void startCompare(const std::vector<config::RunConfig>& runs) override {
    std::vector<std::string> strategies;
    std::vector<int> worlds;
    for (const auto& r : runs) {
      strategies.push_back(config::strategyName(r.strategy));
      worlds.push_back(r.world);
    }
    compared.push_back(strategies);
    comparedWorlds.push_back(worlds);
  }
  void stop() override {}
  void stepGate() override { ++gateSteps; }
  void continueGate() override { ++gateContinues; }
  bool busy() const override { return false; }
  std::string checkConfig(const config::RunConfig&) const override { return ""; }
  int runs = 0;
  int gateSteps = 0;
  int gateContinues = 0;
  std::vector<std::vector<std::string>> compared;
  std::vector<std::vector<int>> comparedWorlds;
};

class AppClicks : public ::testing::Test {
 protected:
  void addSession(const std::string& strategy) {
    Session s;
    s.config.strategy = testing::modeOf<config::StrategyKind>(strategy);
    s.title = strategy;
    s.status = SessionStatus::Done;
    s.recording = syntheticRecording(2, 2000, 4);
    auto lock = store_.lock();
    store_.add(std::move(s));
  }

  void draw(EngineControl* engine = nullptr) { app_.draw(engine); }
  void clickOn(const std::string& name, EngineControl* engine = nullptr) { app_.clickOn(name, engine); }

  void openTab(const std::string& tab, const std::string& firstItem) {
    draw();
    draw();  // ImGui lays a tab bar out in its first frame and places it from the second
    clickOn("tab:" + tab);
    ASSERT_TRUE(app_.items().count(firstItem)) << "the " << tab << " tab did not open";
  }
  void openExportTab() { openTab("Export", "export:trace"); }

  SessionStore store_;
  AppState state_;
  AppDriver app_{store_, state_, 1600, 900};
};

bool exists(const std::string& path) { return std::ifstream(path).good(); }

TEST_F(AppClicks, ExportTraceAndCsvButtonsWriteOneFilePerStrategy) {
  const std::string base = testing::freshTempDir("export_click") + "/lesson";
  std::snprintf(state_.exportBase, sizeof state_.exportBase, "%s", base.c_str());
  addSession("ddp");
  addSession("full_shard");
  openExportTab();
  EXPECT_FALSE(exists(base + ".ddp.json")) << "opening the tab writes nothing";

  clickOn("export:trace");
  for (const char* s : {"ddp", "full_shard"}) {
    EXPECT_TRUE(exists(base + "." + s + ".json")) << s;
    EXPECT_NE(state_.exportMessage.find("wrote " + base + "." + s + ".json"), std::string::npos)
        << state_.exportMessage;
  }
  EXPECT_FALSE(exists(base + ".ddp.csv")) << "only the clicked format is written";

  clickOn("export:csv");
  for (const char* s : {"ddp", "full_shard"}) EXPECT_TRUE(exists(base + "." + s + ".csv")) << s;
  EXPECT_NE(state_.exportMessage.find(".csv"), std::string::npos) << state_.exportMessage;

  // The PNG is read back from the framebuffer by the platform layer after the frame (tested by
  // the screenshot tests); the click asks for it under the same base name.
  EXPECT_TRUE(state_.pngRequest.empty());
  clickOn("export:png");
  EXPECT_EQ(state_.pngRequest, base + ".png");
}

TEST_F(AppClicks, ExportWithNothingToExportTheFileButtonsAreDisabled) {
  const std::string base = testing::freshTempDir("export_click_empty") + "/empty";
  std::snprintf(state_.exportBase, sizeof state_.exportBase, "%s", base.c_str());
  openExportTab();
  clickOn("export:trace");
  clickOn("export:csv");
  EXPECT_TRUE(state_.exportMessage.empty()) << state_.exportMessage;
  EXPECT_FALSE(exists(base + ".json"));
  EXPECT_FALSE(exists(base + ".csv"));
}

TEST_F(AppClicks, ExportAClickBesideTheButtonDoesNothing) {
  const std::string base = testing::freshTempDir("export_click_miss") + "/miss";
  std::snprintf(state_.exportBase, sizeof state_.exportBase, "%s", base.c_str());
  addSession("ddp");
  openExportTab();
  const ItemRect r = app_.items().at("export:trace");
  app_.clickAt(r.centerX(), r.y1 + 40);
  EXPECT_FALSE(exists(base + ".json"));
  EXPECT_TRUE(state_.exportMessage.empty()) << state_.exportMessage;
}

// Compare runs the strategies ticked in the panel, in ZeRO-stage order whatever the click order.
TEST_F(AppClicks, CompareStrategiesAreTickedInThePanel) {
  RecordingEngine engine;
  draw(&engine);
  draw(&engine);
  EXPECT_EQ(state_.compare.strategies,
            (std::vector<config::StrategyKind>{config::StrategyKind::Ddp, config::StrategyKind::FullShard,
                                               config::StrategyKind::ShardGradOp}));
  clickOn("compare:zero1", &engine);
  EXPECT_EQ(state_.compare.strategies,
            (std::vector<config::StrategyKind>{config::StrategyKind::Ddp, config::StrategyKind::Zero1,
                                               config::StrategyKind::ShardGradOp, config::StrategyKind::FullShard}));
  clickOn("compare:ddp", &engine);
  clickOn("compare:full_shard", &engine);
  EXPECT_EQ(state_.compare.strategies,
            (std::vector<config::StrategyKind>{config::StrategyKind::Zero1, config::StrategyKind::ShardGradOp}));
  clickOn("compare", &engine);
  ASSERT_EQ(engine.compared.size(), 1u) << "Compare pressed once";
  EXPECT_EQ(engine.compared[0], (std::vector<std::string>{"zero1", "shard_grad_op"}));
}

// With world sizes typed beside it, Compare runs each ticked strategy at each of them; a list it
// cannot run (a world size the batch does not divide) keeps Compare disabled and says why.
TEST_F(AppClicks, CompareAtSeveralWorldSizes) {
  RecordingEngine engine;
  state_.config.batch = 8;
  state_.compare.strategies = {config::StrategyKind::Ddp, config::StrategyKind::FullShard};
  std::snprintf(state_.compare.worlds, sizeof state_.compare.worlds, "%s", "1,3");
  draw(&engine);
  draw(&engine);
  clickOn("compare", &engine);
  EXPECT_TRUE(engine.compared.empty()) << "batch 8 does not divide by 3: Compare stays disabled";
  std::vector<config::RunConfig> runs;
  const auto problem = compareRunsOf(state_.config, state_.compare, runs);
  ASSERT_TRUE(problem.has_value());
  EXPECT_NE(problem->find("at world 3"), std::string::npos) << *problem;
  std::snprintf(state_.compare.worlds, sizeof state_.compare.worlds, "%s", "1,2,4");
  draw(&engine);
  clickOn("compare", &engine);
  ASSERT_EQ(engine.compared.size(), 1u);
  EXPECT_EQ(engine.compared[0],
            (std::vector<std::string>{"ddp", "ddp", "ddp", "full_shard", "full_shard", "full_shard"}));
  EXPECT_EQ(engine.comparedWorlds[0], (std::vector<int>{1, 2, 4, 1, 2, 4}));
}

TEST_F(AppClicks, EstimateSeedExamplesAreOneClickAway) {
  openTab("Estimate", "estimate:seed-7b");
  EXPECT_STREQ(state_.estimate.parameters, "70B") << "opens on the Llama-70B example";
  // The inverse question for the Llama-70B example (2,2,8 B, 80 GB): only full_shard fits, on 11.
  EXPECT_EQ(state_.estimate.fewestGpus,
            "ddp none, no_shard none, zero1 none, deepspeed_zero2 none, shard_grad_op none, full_shard 11, "
            "hybrid_shard_zero2 none, "
            "hybrid_shard none");
  clickOn("estimate:seed-7b");
  EXPECT_STREQ(state_.estimate.parameters, "7B");
  EXPECT_STREQ(state_.estimate.worlds, "1,3");
  EXPECT_EQ(state_.estimate.bytesPerParameter[2], 4.0f);
  clickOn("estimate:seed-70b");
  EXPECT_STREQ(state_.estimate.parameters, "70B");
  EXPECT_STREQ(state_.estimate.worlds, "1,8,16");
  EXPECT_EQ(state_.estimate.bytesPerParameter[2], 8.0f);
  EXPECT_EQ(state_.estimate.trainedPercent, 100.0f);
  clickOn("estimate:seed-lora");
  EXPECT_STREQ(state_.estimate.worlds, "1,4");
  EXPECT_EQ(state_.estimate.trainedPercent, 0.5f) << "LoRA trains a small share";
  clickOn("estimate:seed-7b");
  EXPECT_EQ(state_.estimate.trainedPercent, 100.0f) << "the full fine-tuning examples reset it";
}

// The run's prediction has a column per strategy that compare runs by default or that divides
// something; no_shard (ddp's figures again) and the hybrid ones join when the configuration is one.
TEST_F(AppClicks, EstimateColumnsAreTheDividingStrategiesAndTheOneConfigured) {
  const auto columns = [&] {
    std::set<int> seen;
    for (const auto& [name, rect] : app_.items()) {
      int row = 0, column = 0;
      if (std::sscanf(name.c_str(), "estimate:figure:%d:%d", &row, &column) == 2) seen.insert(column);
    }
    return seen.size();
  };
  openTab("Estimate", "estimate:seed-7b");
  EXPECT_EQ(columns(), 4u) << "ddp, zero1, shard_grad_op, full_shard";
  state_.config.strategy = config::StrategyKind::NoShard;
  draw();
  draw();
  EXPECT_EQ(columns(), 5u) << "and no_shard, configured";
  state_.config.strategy = config::StrategyKind::HybridShard;
  state_.config.world = 4;
  draw();
  draw();
  EXPECT_EQ(columns(), 6u) << "the two hybrid ones instead";
}

TEST_F(AppClicks, EstimateTabDrawsBadInputAsAMessage) {
  openTab("Estimate", "estimate:seed-7b");
  std::snprintf(state_.estimate.parameters, sizeof state_.estimate.parameters, "seventy");
  std::snprintf(state_.estimate.worlds, sizeof state_.estimate.worlds, "1,,8");
  state_.config.world = 0;  // no prediction for a run validate() refuses
  draw();
  EXPECT_TRUE(app_.items().count("estimate:problem")) << "the what-if says what is wrong";
  EXPECT_TRUE(app_.items().count("estimate:run-problem")) << "the run prediction says what is wrong";
  std::snprintf(state_.estimate.parameters, sizeof state_.estimate.parameters, "7B");
  std::snprintf(state_.estimate.worlds, sizeof state_.estimate.worlds, "1,3");
  state_.config.world = 2;
  draw();
  EXPECT_FALSE(app_.items().count("estimate:problem"));
  EXPECT_FALSE(app_.items().count("estimate:run-problem"));
  state_.config.batch = 16;
  state_.config.accumulate = 4;  // a valid run: it gets a prediction too
  draw();
  EXPECT_FALSE(app_.items().count("estimate:run-problem")) << state_.estimate.predictionProblem;
}

// Where the estimate tab drew the prediction table's figures: how many "on host" and measured
// figures went beside or under their prediction, each checked to stay inside its column.
struct EstimateCells {
  int measured = 0, host = 0, below = 0;
};
EstimateCells checkEstimateCells(const std::map<std::string, ItemRect>& items) {
  EstimateCells cells;
  const ItemRect table = items.at("estimate:prediction-table");
  std::map<int, float> columnLeft;  // where each column starts: the left edge of its figures
  for (const auto& [name, rect] : items) {
    int row = 0, column = 0;
    if (std::sscanf(name.c_str(), "estimate:figure:%d:%d", &row, &column) == 2) columnLeft[column] = rect.x0;
  }
  for (const auto& [name, rect] : items) {
    char kind[16] = {0};
    int row = 0, column = 0;
    if (std::sscanf(name.c_str(), "estimate:%15[a-z]:%d:%d", kind, &row, &column) != 3) continue;
    const float right = columnLeft.count(column + 1) ? columnLeft.at(column + 1) : table.x1;
    EXPECT_LE(rect.x1, right) << name << " runs past its column";
    if (std::string(kind) == "figure") continue;
    (std::string(kind) == "host" ? cells.host : cells.measured) += 1;
    const std::string figure = "estimate:figure:" + std::to_string(row) + ":" + std::to_string(column);
    EXPECT_TRUE(items.count(figure)) << figure;
    if (items.count(figure)) cells.below += rect.y0 >= items.at(figure).y1 ? 1 : 0;
  }
  return cells;
}

// The H200's offloaded run opened beside its prediction ("225.16 MiB on host", and what the run
// measured). At 1600 px the what-if goes under the run's table, which then has the width for every
// figure on one line; at projector scale 2 "on host" and the measured figures go below the
// prediction. Either way every figure stays inside its column instead of running into the next.
TEST_F(AppClicks, EstimateFiguresStayInsideTheirColumns) {
  OpenedRecord record = openRecord({std::string(SHARDSCOPE_RESULTS_DIR) + "/gpu_offload_world2_summary_h200.json"});
  ASSERT_TRUE(record.error.empty()) << record.error;
  ASSERT_TRUE(record.ownConfig);
  state_.config = record.config;
  {
    auto lock = store_.lock();
    for (auto& s : record.sessions) store_.add(std::move(s));
  }
  openTab("Estimate", "estimate:seed-7b");
  draw();
  ASSERT_TRUE(app_.items().count("estimate:prediction-table"));
  EXPECT_GT(app_.items().at("estimate:seed-7b").y0, app_.items().at("estimate:prediction-table").y1)
      << "the what-if under the run's table at this width";
  const EstimateCells one = checkEstimateCells(app_.items());
  EXPECT_GE(one.measured, 6) << "the full_shard run is compared with its prediction";
  EXPECT_GE(one.host, 6) << "shards, gradients and optimizer state on the host under shard_grad_op and full_shard";
  EXPECT_EQ(one.below, 0) << "the whole width leaves room beside every figure";

  applyLook(Look{2.0f, false});
  draw();
  draw();
  const EstimateCells two = checkEstimateCells(app_.items());
  EXPECT_EQ(two.host, one.host);
  EXPECT_GT(two.below, 0) << "at twice the text size some go below their figure";
  applyLook(Look{});
}

// A summary has no memory over time, but it kept each rank's split at its peak: the memory tab
// draws those bars (the H200's offloaded world-2 run: two ranks) rather than nothing.
TEST_F(AppClicks, MemoryTabOfASummaryDrawsEachRanksPeak) {
  OpenedRecord record = openRecord({std::string(SHARDSCOPE_RESULTS_DIR) + "/gpu_offload_world2_summary_h200.json"});
  ASSERT_TRUE(record.error.empty()) << record.error;
  {
    auto lock = store_.lock();
    for (auto& s : record.sessions) store_.add(std::move(s));
  }
  state_.openTab = bottomTabTitle("memory");
  draw();
  draw();
  EXPECT_TRUE(app_.items().count("memory:saved-peak:0"));
  EXPECT_TRUE(app_.items().count("memory:saved-peak:1"));
  EXPECT_FALSE(app_.items().count("memory:saved-peak:2"));
}

// A transformer shape adds activations to every bar, and the inverse questions come with it:
// Llama-2 70B with full recomputation keeps 2 x 4096 x 8192 x 80 B = 5.37 GB per GPU (Korthikanti
// et al.'s 2 sbh per layer); fp32 doubles that. The largest model whose model states fit 16 GPUs
// of 80 GB under full_shard, at 2 + 2 + 8 B per parameter: 80 GB / (12 B / 16) = 106.7B; with a
// tenth kept free, 96B.
TEST_F(AppClicks, EstimateAddsActivationsAndTheLargestModel) {
  openTab("Estimate", "estimate:seed-70b");
  clickOn("estimate:seed-70b");
  EXPECT_EQ(state_.estimate.activationBytes, 0.0) << "no shape chosen: model states only";
  EXPECT_NE(state_.estimate.largestModels.find("16 GPUs: ddp 6.67B"), std::string::npos)
      << state_.estimate.largestModels;
  EXPECT_NE(state_.estimate.largestModels.find("full_shard 107B"), std::string::npos) << state_.estimate.largestModels;
  const auto& presets = estimate::architecturePresets();
  const auto llama =
      std::find_if(presets.begin(), presets.end(), [](const auto& p) { return std::string(p.name) == "llama2-70b"; });
  ASSERT_NE(llama, presets.end());
  state_.estimate.architecture = static_cast<int>(llama - presets.begin()) + 1;
  state_.estimate.recompute = 2;  // full
  draw();
  EXPECT_NEAR(state_.estimate.activationBytes, 2.0 * 4096 * 8192 * 80, 1.0);
  state_.estimate.activationPrecision = 1;  // fp32
  draw();
  EXPECT_NEAR(state_.estimate.activationBytes, 4.0 * 4096 * 8192 * 80, 1.0);
  state_.estimate.reservePercent = 10;
  draw();
  EXPECT_NE(state_.estimate.largestModels.find("full_shard 96B"), std::string::npos) << state_.estimate.largestModels;
  // Activations count toward the fewest GPUs: 12 GB / N of model states + 10.7 GB must fit 72 GB.
  EXPECT_NE(state_.estimate.fewestGpus.find("full_shard 14"), std::string::npos) << state_.estimate.fewestGpus;
  state_.estimate.architecture = static_cast<int>(presets.size()) + 1;  // custom
  std::snprintf(state_.estimate.customShape, sizeof state_.estimate.customShape, "%s", "32,4096");
  draw();
  EXPECT_TRUE(app_.items().count("estimate:problem")) << "a bad shape is a message, not a crash";
}

// The first screen, before any run: the three ways in, one click each. Run and Compare start the
// sidebar's configuration; Open and Listen unfold their sidebar panels; a lesson starts.
TEST_F(AppClicks, TheFirstScreenOffersTheThreeWaysInOneClickEach) {
  RecordingEngine engine;
  draw(&engine);
  draw(&engine);
  for (const char* item : {"door:run", "door:compare", "door:open", "door:listen", "door:lesson:ddp_vs_fsdp"}) {
    EXPECT_TRUE(app_.items().count(item)) << item << " is not on the first screen";
  }
  EXPECT_FALSE(app_.items().count("open:path")) << "the Open panel starts folded";
  clickOn("door:open", &engine);
  EXPECT_TRUE(app_.items().count("open:path")) << "door:open did not unfold the Open panel";
  clickOn("door:listen", &engine);
  EXPECT_TRUE(app_.items().count("listen:port")) << "door:listen did not unfold the Listen panel";
  clickOn("door:run", &engine);
  EXPECT_EQ(engine.runs, 1);
  clickOn("door:compare", &engine);
  ASSERT_EQ(engine.compared.size(), 1u);
  EXPECT_EQ(engine.compared[0], (std::vector<std::string>{"ddp", "full_shard", "shard_grad_op"}));
  clickOn("door:lesson:ddp_vs_fsdp", &engine);
  EXPECT_TRUE(state_.lesson.active);
  EXPECT_EQ(state_.lesson.lesson.name, "ddp_vs_fsdp");
}

// With a configuration Run cannot start, the first screen's Run is disabled and says why.
TEST_F(AppClicks, TheFirstScreensRunSaysWhyItCannotStart) {
  RecordingEngine engine;
  state_.config.world = 0;
  draw(&engine);
  draw(&engine);
  clickOn("door:run", &engine);
  EXPECT_EQ(engine.runs, 0);
}

// Every tab the views name (config/view_tabs.h) is drawn by one row of the tab table, in order.
TEST(BottomTabs, EveryNamedTabHasItsRowInOrder) {
  ASSERT_EQ(bottomTabs().size(), config::viewTabs().size());
  for (size_t i = 0; i < config::viewTabs().size(); ++i) {
    EXPECT_STREQ(bottomTabs()[i].name, config::viewTabs()[i].name);
    EXPECT_NE(bottomTabs()[i].draw, nullptr) << config::viewTabs()[i].name;
  }
}

}  // namespace
}  // namespace shardscope::ui
