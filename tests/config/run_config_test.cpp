#include "config/run_config.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <type_traits>
#include <variant>

#include "config/strategies.h"
#include "config/tensor_parallel.h"
#include "tests/support/run_cli.h"

namespace shardscope::config {
namespace {

std::string errorOf(RunConfig c) {
  auto e = validate(c);
  return e ? *e : "";
}

TEST(RunConfig, DefaultsAreValid) { EXPECT_EQ(errorOf(RunConfig{}), ""); }

TEST(RunConfig, WorldSizeOutsideLimitNamesValueAndRange) {
  RunConfig c;
  c.world = 0;
  EXPECT_NE(errorOf(c).find("--world is 0"), std::string::npos) << errorOf(c);
  c.world = kMaxWorldSize + 1;
  EXPECT_NE(errorOf(c).find("between 1 and " + std::to_string(kMaxWorldSize)), std::string::npos);
}

TEST(RunConfig, BatchMustDivideByWorldAndSuggestsAFix) {
  RunConfig c;
  c.world = 3;
  c.batch = 16;
  const auto e = errorOf(c);
  EXPECT_NE(e.find("--batch 16 is not divisible by --world 3"), std::string::npos) << e;
  EXPECT_NE(e.find("--batch 18"), std::string::npos) << e;
}

TEST(RunConfig, TensorParallelDividesTheWorldTheHeadsAndTheWidth) {
  RunConfig c;
  c.model = ModelKind::Gpt;
  c.world = 4;
  c.hidden = 64;
  c.heads = 4;
  c.batch = 8;
  c.tp = 3;
  EXPECT_NE(errorOf(c).find("--tp 3 does not divide --world 4"), std::string::npos) << errorOf(c);
  EXPECT_NE(errorOf(c).find("pass one of 1, 2, 4"), std::string::npos) << errorOf(c);
  c.tp = 4;
  c.heads = 2;
  c.hidden = 64;
  EXPECT_NE(errorOf(c).find("--tp 4 does not divide --heads 2"), std::string::npos) << errorOf(c);
  c.heads = 4;
  EXPECT_EQ(errorOf(c), "");
  // A hybrid strategy's shard groups divide the data ranks: 4 / tp 2 = 2, so 2 or 1, not 4.
  c.tp = 2;
  c.strategy = StrategyKind::HybridShard;
  EXPECT_EQ(errorOf(c), "");
  EXPECT_EQ(shardGroupSize(c), 1) << "the 2 data ranks over their smallest prime factor";
  EXPECT_EQ(replicaCount(c), 2);
  c.shardGroupSize = 4;
  EXPECT_NE(errorOf(c).find("does not divide the 2 data ranks (--world 4 / --tp 2)"), std::string::npos) << errorOf(c);
  c.shardGroupSize = 0;
  c.tp = 4;
  c.strategy = StrategyKind::FullShard;
  c.loraRank = 4;
  EXPECT_EQ(errorOf(c), "") << "LoRA's adapters split as their base weights";
  c.seq = 8;
  c.sequenceParallel = true;
  EXPECT_NE(errorOf(c).find("--sequence-parallel with --lora-rank"), std::string::npos) << errorOf(c);
  c.sequenceParallel = false;
  c.loraRank = 0;
  c.model = ModelKind::Mlp;
  c.hidden = 30;
  EXPECT_NE(errorOf(c).find("--tp 4 does not divide --hidden 30"), std::string::npos) << errorOf(c);
  // A tensor group shares its slice of the batch: --batch divides by world / tp, not by world.
  c.hidden = 32;
  c.tp = 2;
  c.batch = 2;
  EXPECT_EQ(errorOf(c), "");
  c.batch = 3;
  EXPECT_NE(errorOf(c).find("the 2 data-parallel ranks"), std::string::npos) << errorOf(c);
}

TEST(RunConfig, TensorParallelSplitsMatricesAndLeavesTheRestWhole) {
  RunConfig c;
  c.model = ModelKind::Gpt;
  c.layers = 1;
  c.hidden = 8;
  c.heads = 2;
  c.tp = 2;
  std::map<std::string, std::pair<TensorSplit, std::vector<int64_t>>> byName;
  const auto layout = tensorParallelLayout(c);
  const auto splits = tensorSplits(c);
  for (size_t i = 0; i < layout.size(); ++i) byName[layout[i].name] = {splits[i], layout[i].shape};
  EXPECT_EQ(byName["blocks.0.attn.qkv.weight"],
            std::make_pair(TensorSplit::FusedColumns3, std::vector<int64_t>{12, 8}));
  EXPECT_EQ(byName["blocks.0.attn.proj.weight"], std::make_pair(TensorSplit::Rows, std::vector<int64_t>{8, 4}));
  EXPECT_EQ(byName["blocks.0.attn.proj.bias"].first, TensorSplit::Replicated);
  EXPECT_EQ(byName["blocks.0.mlp.fc.bias"], std::make_pair(TensorSplit::Columns, std::vector<int64_t>{16}));
  EXPECT_EQ(byName["lm_head.weight"].first, TensorSplit::Replicated);
  // mlp: inp, blocks.0, blocks.1, head paired (inp, blocks.0), (blocks.1, head); with one block
  // more the head is the odd one out.
  c.model = ModelKind::Mlp;
  c.layers = 2;
  EXPECT_EQ(tensorSplits(c).back(), TensorSplit::Replicated);  // head.bias, after the all-reduce
  EXPECT_TRUE(replicatedLinears(c).empty());
  c.layers = 3;
  EXPECT_EQ(replicatedLinears(c), std::vector<std::string>{"head"});
  EXPECT_EQ(tensorSplits(c)[tensorSplits(c).size() - 2], TensorSplit::Replicated);  // head.weight
}

TEST(RunConfig, MicroBatchesMustDivideARanksBatch) {
  RunConfig c;  // batch 16, world 2: 8 samples per rank
  c.accumulate = 4;
  EXPECT_EQ(errorOf(c), "");
  for (const int bad : {3, 16}) {
    c.accumulate = bad;
    const auto e = errorOf(c);
    EXPECT_NE(e.find("--accumulate " + std::to_string(bad)), std::string::npos) << e;
    EXPECT_NE(e.find("divisor of 8"), std::string::npos) << e;
  }
  c.accumulate = 0;
  EXPECT_NE(errorOf(c).find("--accumulate is 0; it must be 1"), std::string::npos) << errorOf(c);
}

TEST(RunConfig, LoraRankIsZeroOrAtMostHidden) {
  RunConfig c;  // hidden 64
  c.loraRank = 64;
  EXPECT_EQ(errorOf(c), "");
  c.loraRank = 65;
  EXPECT_NE(errorOf(c).find("--lora-rank is 65"), std::string::npos) << errorOf(c);
  c.loraRank = -1;
  EXPECT_NE(errorOf(c).find("from 1 to --hidden (64)"), std::string::npos) << errorOf(c);
}

// A name is read once, where it enters (a config file, an option): an unknown one is refused there,
// naming the allowed ones, and leaves the configuration as it was.
TEST(RunConfig, UnknownNamesListTheAllowedOnes) {
  const auto errorOfKey = [](const char* key, const char* value) {
    RunConfig c;
    const auto error = applyConfigJson(nlohmann::json{{key, value}}, c);
    EXPECT_EQ(c.toJson(), RunConfig{}.toJson()) << key << " changed the config";
    return error ? *error : std::string();
  };
  EXPECT_NE(errorOfKey("strategy", "zero3").find("ddp, no_shard, zero1, shard_grad_op, full_shard"), std::string::npos);
  EXPECT_NE(errorOfKey("model", "resnet").find("--model 'resnet'"), std::string::npos);
  EXPECT_NE(errorOfKey("optimizer", "lion").find("sgd, adam, adamw"), std::string::npos);
  EXPECT_NE(errorOfKey("activation_checkpointing", "all")
                .find("--activation-checkpointing 'all' is not known; choose one of: off, blocks"),
            std::string::npos);
  RunConfig c;
  const auto error = applyConfigJson(nlohmann::json{{"strategy", 3}}, c);
  ASSERT_TRUE(error);
  EXPECT_NE(error->find("must be one of ddp, no_shard, zero1, shard_grad_op, full_shard, hybrid_shard_zero2, "
                        "hybrid_shard, as a string"),
            std::string::npos)
      << *error;
}

// HSDP's shard group: a divisor of the world; by default the world split into the fewest replicas.
TEST(RunConfig, ShardGroupSizeDividesTheWorldAndOnlyHybridStrategiesTakeIt) {
  RunConfig c;
  c.strategy = StrategyKind::HybridShard;
  c.batch = 24;
  for (auto [world, group] : {std::pair{4, 2}, {6, 3}, {8, 4}, {2, 1}, {3, 1}, {1, 1}}) {
    c.world = world;
    EXPECT_EQ(shardGroupSize(c), group) << "world " << world;
    EXPECT_EQ(replicaCount(c), world / group) << "world " << world;
    EXPECT_EQ(errorOf(c), "") << "world " << world;
  }
  c.world = 6;
  c.shardGroupSize = 2;
  EXPECT_EQ(shardGroupSize(c), 2);
  EXPECT_EQ(errorOf(c), "");
  c.shardGroupSize = 4;
  EXPECT_NE(errorOf(c).find("--shard-group-size 4 does not divide --world 6"), std::string::npos) << errorOf(c);
  EXPECT_NE(errorOf(c).find("pass one of 1, 2, 3, 6"), std::string::npos) << errorOf(c);
  c.shardGroupSize = -1;
  EXPECT_NE(errorOf(c).find("--shard-group-size -1"), std::string::npos) << errorOf(c);

  c.strategy = StrategyKind::FullShard;
  c.shardGroupSize = 2;
  EXPECT_NE(errorOf(c).find("is for the hybrid strategies; full_shard divides among the whole world"),
            std::string::npos)
      << errorOf(c);
  c.shardGroupSize = 0;
  EXPECT_EQ(shardGroupSize(c), 6) << "every other strategy shards over the world";
  EXPECT_EQ(replicaCount(c), 1);

  // A comparison passes the group size to the hybrid runs only.
  c.shardGroupSize = 2;
  const auto runs = comparisonRuns(c, {StrategyKind::Ddp, StrategyKind::HybridShard}, {2, 4});
  EXPECT_EQ(runs[0].shardGroupSize, 0);
  EXPECT_EQ(runs[3].shardGroupSize, 2);
  EXPECT_EQ(comparisonProblem(runs), std::nullopt);
}

TEST(RunConfig, OffloadIsForShardedStrategiesOnGpuRanks) {
  RunConfig c;
  c.offload = Offload::Cpu;
  c.strategy = StrategyKind::FullShard;
  EXPECT_NE(errorOf(c).find("but --device is cpu: a CPU run's state is in host memory already"), std::string::npos)
      << errorOf(c);
  c.device = DeviceKind::Cuda;
  EXPECT_EQ(errorOf(c), "");
  for (StrategyKind unsharded : {StrategyKind::Ddp, StrategyKind::Zero1}) {
    c.strategy = unsharded;
    EXPECT_NE(errorOf(c).find(std::string("--strategy ") + strategyName(unsharded) + " does not shard parameters"),
              std::string::npos)
        << errorOf(c);
  }
  c.strategy = StrategyKind::HybridShardZero2;
  c.world = 4;
  c.batch = 16;
  EXPECT_EQ(errorOf(c), "");
}

TEST(RunConfig, NonPositiveSizesAreRejected) {
  for (auto field : {&RunConfig::layers, &RunConfig::hidden, &RunConfig::batch, &RunConfig::steps, &RunConfig::features,
                     &RunConfig::classes}) {
    RunConfig c;
    c.*field = 0;
    EXPECT_NE(errorOf(c).find("must be a positive integer"), std::string::npos) << errorOf(c);
  }
  RunConfig c;
  c.model = ModelKind::Gpt;
  c.vocab = -5;
  EXPECT_NE(errorOf(c).find("--vocab is -5"), std::string::npos);
  c = RunConfig{};
  c.lr = 0;
  EXPECT_NE(errorOf(c).find("--lr"), std::string::npos);
}

// A number option's own range is its field's, and validate() walks the fields: each end of every
// range is refused just past it and taken at it, with the value, the rule and (where there is one)
// the value to pass instead. NaN is no number in any range.
TEST(RunConfig, EveryRangeIsCheckedFromTheFieldsTable) {
  int ranged = 0;
  for (const auto& field : configFields()) {
    if (!field.range) continue;
    ++ranged;
    const NumberRange& range = *field.range;
    const auto valueOf = [&](double v) {
      RunConfig c;
      std::visit(
          [&](auto member) {
            using T = std::decay_t<decltype(c.*member)>;
            if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) c.*member = static_cast<T>(v);
          },
          field.member);
      return c;
    };
    const std::string key = std::string("--") + field.key + " is ";
    const double below = range.minExclusive ? range.min : range.min - 1;
    const auto low = outOfRange(valueOf(below), field);
    if (!(range.zeroAlso && below == 0)) {
      ASSERT_TRUE(low.has_value()) << field.key << " at " << below;
      EXPECT_EQ(low->rfind(key, 0), 0u) << *low;
      EXPECT_NE(low->find(range.rule), std::string::npos) << *low;
      if (range.example) EXPECT_NE(low->find(std::string("Pass e.g. --") + field.key), std::string::npos) << *low;
      EXPECT_EQ(validate(valueOf(below)), low) << "validate() says what the table says";
    }
    if (!range.minExclusive) EXPECT_FALSE(outOfRange(valueOf(range.min), field)) << field.key << " at its min";
    if (range.max < 1e300) {
      EXPECT_FALSE(outOfRange(valueOf(range.max), field)) << field.key << " at its max";
      EXPECT_TRUE(outOfRange(valueOf(range.max + 1), field)) << field.key << " past its max";
    }
    if (range.zeroAlso) EXPECT_FALSE(outOfRange(valueOf(0), field)) << field.key << ": 0 turns it off";
  }
  EXPECT_GE(ranged, 17) << "the single-option checks live in the table";
  RunConfig c;
  c.lr = std::nan("");
  EXPECT_NE(errorOf(c).find("--lr is nan; it must be a positive finite number"), std::string::npos) << errorOf(c);
  c = RunConfig{};
  c.stallTimeoutS = 2;
  EXPECT_NE(errorOf(c).find("--stall-timeout is 2; give the seconds"), std::string::npos) << errorOf(c);
}

TEST(RunConfig, HeadsMustDivideHidden) {
  RunConfig c;
  c.model = ModelKind::Gpt;
  c.hidden = 30;
  c.heads = 4;
  EXPECT_NE(errorOf(c).find("--heads 4 does not divide --hidden 30"), std::string::npos);
  c.model = ModelKind::Mlp;  // heads are a gpt option only
  EXPECT_EQ(errorOf(c), "");
}

// Outputs that cannot be written are refused when a run starts (outputsProblem, and
// makeOutputDirectories, which every run calls first), not by validate(): the app calls that every
// frame, and it reads no file.
TEST(RunConfig, UnwritableOutputsAreRejectedWhenARunStarts) {
  RunConfig c;
  c.exportDir = "/etc/hostname/shardscope-under-a-file";
  EXPECT_EQ(errorOf(c), "") << "validate() looked at the file system";
  const auto problem = outputsProblem(c).value_or("");
  EXPECT_NE(problem.find("--export '/etc/hostname/shardscope-under-a-file' cannot be created ('/etc/hostname' is "
                         "not a directory)"),
            std::string::npos)
      << problem;
  EXPECT_EQ(makeOutputDirectories(c).value_or(""), problem);
  c = RunConfig{};
  c.summaryPath = "/nonexistent-dir/for/summary.json";
  EXPECT_EQ(errorOf(c), "");
  EXPECT_NE(outputsProblem(c).value_or("").find("--summary"), std::string::npos);
  c = RunConfig{};
  c.tracePath = "out.txt";  // a FIFO or device may have any name: known by looking at it
  EXPECT_EQ(errorOf(c), "");
  EXPECT_NE(outputsProblem(c).value_or("").find(".pftrace"), std::string::npos);
}

// validate() runs every frame in the app: it looks and creates nothing. The directory comes when a
// run starts.
TEST(RunConfig, ValidateCreatesNothingAndARunMakesItsExportDirectory) {
  const auto dir = testing::freshTempDir("validate_pure");
  RunConfig c = testing::tinyGptConfig();
  c.steps = 1;
  c.exportDir = dir + "/not/yet";
  EXPECT_EQ(errorOf(c), "");
  struct stat st {};
  EXPECT_NE(::stat((dir + "/not").c_str(), &st), 0) << "validate() made a directory";
  const auto r = testing::runShardscope(testing::runArgsOf(c, {"--export", c.exportDir}));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(::stat((c.exportDir + "/final.pt").c_str(), &st), 0) << r.output;
}

// Every field is one entry of one list, which the config file, the JSON description and the CLI
// all walk: a description read back is the same run.
TEST(RunConfig, EveryFieldReadsBackFromItsDescription) {
  std::set<std::string> keys;
  for (const auto& field : configFields()) EXPECT_TRUE(keys.insert(field.key).second) << field.key;
  RunConfig changed;
  changed.model = ModelKind::Gpt;
  changed.strategy = StrategyKind::ShardGradOp;
  changed.precision = Precision::Bf16;
  changed.stepGate = StepGateMode::Step;
  changed.bucketCapMb = 3.5;
  changed.seed = 1LL << 40;
  changed.stallTimeoutS = 7;
  RunConfig back;
  ASSERT_FALSE(applyConfigJson(changed.toJson(), back).has_value());
  EXPECT_EQ(back.toJson(), changed.toJson());
  EXPECT_EQ(back.seed, changed.seed);
  EXPECT_EQ(changed.toJson().size(), configFields().size() - 4) << "all but the four output paths";
  EXPECT_FALSE(changed.toJson().contains("trace"));
}

TEST(RunConfig, ConfigFileKeysApplyWithDashesOrUnderscores) {
  const auto dir = testing::freshTempDir("config_file");
  const auto path = dir + "/run.json";
  std::ofstream(path) << R"({"model": "gpt", "world": 4, "bucket_cap_mb": 5.5, "lr": 0.01,
                             "activation-checkpointing": "blocks"})";
  RunConfig c;
  ASSERT_FALSE(loadConfigFile(path, c).has_value());
  EXPECT_EQ(c.model, ModelKind::Gpt);
  EXPECT_EQ(c.activationCheckpointing, Checkpointing::Blocks);
  EXPECT_EQ(c.world, 4);
  EXPECT_DOUBLE_EQ(c.bucketCapMb, 5.5);
  EXPECT_DOUBLE_EQ(c.lr, 0.01);
}

// '-' and '_' spell one key: given both ways, the later silently won. Refused, naming both, and
// the keys applied are reported as the file spells them (for errors found later: RunOptions).
TEST(RunConfig, AKeyInBothSpellingsIsRefused) {
  RunConfig c;
  const auto error = applyConfigJson(nlohmann::json{{"bucket-cap-mb", 1}, {"bucket_cap_mb", 2}}, c);
  ASSERT_TRUE(error.has_value()) << "ran with bucket-cap-mb " << c.bucketCapMb;
  EXPECT_NE(error->find("config keys 'bucket-cap-mb' and 'bucket_cap_mb' are one key, --bucket-cap-mb, given twice"),
            std::string::npos)
      << *error;
  std::map<std::string, std::string> spellings;
  ASSERT_FALSE(applyConfigJson(nlohmann::json{{"bucket_cap_mb", 2}, {"world", 4}}, c, &spellings).has_value());
  EXPECT_EQ(spellings, (std::map<std::string, std::string>{{"bucket-cap-mb", "bucket_cap_mb"}, {"world", "world"}}));
}

TEST(RunConfig, MalformedConfigFilesSayWhatIsWrong) {
  const auto dir = testing::freshTempDir("config_bad");
  RunConfig c;
  std::ofstream(dir + "/broken.json") << R"({"model": "gpt", )";
  auto e = loadConfigFile(dir + "/broken.json", c);
  ASSERT_TRUE(e.has_value());
  EXPECT_NE(e->find("not valid JSON"), std::string::npos) << *e;

  std::ofstream(dir + "/unknown.json") << R"({"modle": "gpt"})";
  e = loadConfigFile(dir + "/unknown.json", c);
  ASSERT_TRUE(e.has_value());
  EXPECT_NE(e->find("unknown config key 'modle'"), std::string::npos) << *e;

  std::ofstream(dir + "/type.json") << R"({"world": "four"})";
  e = loadConfigFile(dir + "/type.json", c);
  ASSERT_TRUE(e.has_value());
  EXPECT_NE(e->find("'world'"), std::string::npos) << *e;
  EXPECT_NE(e->find("it must be a whole number"), std::string::npos) << *e;

  e = loadConfigFile(dir + "/missing.json", c);
  ASSERT_TRUE(e.has_value());
  EXPECT_NE(e->find("cannot read"), std::string::npos);
}

}  // namespace
}  // namespace shardscope::config
