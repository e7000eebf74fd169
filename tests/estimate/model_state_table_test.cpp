// The seed documents' memory tables come out of the estimator as the documents give them, and the
// quantities people type are read the way they mean them.
#include "estimate/model_state_table.h"

#include <gtest/gtest.h>

#include "estimate/parse_quantity.h"

namespace shardscope::estimate {
namespace {

const ModelStateRow& row(const std::vector<ModelStateRow>& rows, const std::string& strategy, int world) {
  for (const auto& r : rows) {
    if (r.strategy == strategy && r.world == world) return r;
  }
  ADD_FAILURE() << "no row " << strategy << " x " << world;
  static const ModelStateRow none;
  return none;
}

// 000_*.txt, "When to Use Which": "LoRA fine-tune, any model size: DDP, adapter is tiny". The
// adapters' gradients and optimizer state are tiny, but ddp still holds every frozen weight: a 7B
// model fits one 80 GB GPU that way, a 70B model (140 GB of bf16 weights) does not, and only
// full_shard brings it under 80 GB on 4 GPUs.
TEST(ModelStateTable, LoraShrinksGradientsAndOptimizerStateButNotTheFrozenWeights) {
  ModelStateCase c;
  c.bytes = {2, 2, 12};
  c.worlds = {4};
  c.trainedFraction = 0.005;
  c.parameters = 7e9;
  auto rows = modelStateTable(c);
  EXPECT_DOUBLE_EQ(row(rows, "ddp", 4).weights, 14e9);
  EXPECT_DOUBLE_EQ(row(rows, "ddp", 4).grads, 2 * 0.005 * 7e9);
  EXPECT_DOUBLE_EQ(row(rows, "ddp", 4).optimizer, 12 * 0.005 * 7e9);
  EXPECT_TRUE(row(rows, "ddp", 4).fits);
  c.parameters = 70e9;
  rows = modelStateTable(c);
  EXPECT_FALSE(row(rows, "ddp", 4).fits) << row(rows, "ddp", 4).total();
  EXPECT_FALSE(row(rows, "zero1", 4).fits);
  EXPECT_TRUE(row(rows, "full_shard", 4).fits) << row(rows, "full_shard", 4).total();
  EXPECT_DOUBLE_EQ(row(rows, "full_shard", 4).weights, 35e9);
}

// 000_*.txt, "Memory example (7B model, 3 GPUs, full FT)": 14 + 14 + 28 = ~56 GB per GPU under
// DDP; 4.7 + 4.7 + 9.3 = ~19 GB under FSDP.
TEST(ModelStateTable, SevenBillionOnThreeGpusAsTheSeedTabulatesIt) {
  ModelStateCase c;
  c.parameters = 7e9;
  c.bytes = {2, 2, 4};
  c.worlds = {3};
  const auto rows = modelStateTable(c);
  const auto& ddp = row(rows, "ddp", 3);
  EXPECT_DOUBLE_EQ(ddp.weights, 14e9);
  EXPECT_DOUBLE_EQ(ddp.grads, 14e9);
  EXPECT_DOUBLE_EQ(ddp.optimizer, 28e9);
  EXPECT_DOUBLE_EQ(ddp.total(), 56e9);
  const auto& fsdp = row(rows, "full_shard", 3);
  EXPECT_NEAR(fsdp.weights, 4.7e9, 0.05e9);
  EXPECT_NEAR(fsdp.grads, 4.7e9, 0.05e9);
  EXPECT_NEAR(fsdp.optimizer, 9.3e9, 0.05e9);
  EXPECT_NEAR(fsdp.total(), 19e9, 0.5e9);
}

// 004_*.txt, "A Concrete Example (Llama 70B)": 840 GB to train; DDP needs 840 GB on each of 8
// H100s (crash); FSDP on 8 needs 105 GB (still too big for 80 GB); on 16, 52.5 GB (fits).
TEST(ModelStateTable, Llama70BOnEightAndSixteenH100s) {
  ModelStateCase c;
  c.parameters = 70e9;
  c.bytes = {2, 2, 8};
  c.worlds = {1, 8, 16};
  c.gpuMemoryBytes = 80e9;
  const auto rows = modelStateTable(c);
  EXPECT_DOUBLE_EQ(row(rows, "ddp", 1).total(), 840e9);
  EXPECT_FALSE(row(rows, "ddp", 1).fits);
  EXPECT_DOUBLE_EQ(row(rows, "ddp", 8).total(), 840e9) << "DDP replicates: more GPUs do not help";
  EXPECT_FALSE(row(rows, "ddp", 8).fits);
  // ZeRO-1 divides only the optimizer state: 140 + 140 + 560/16 = 315 GB.
  EXPECT_DOUBLE_EQ(row(rows, "zero1", 16).total(), 315e9);
  EXPECT_FALSE(row(rows, "zero1", 16).fits);
  EXPECT_DOUBLE_EQ(row(rows, "full_shard", 8).total(), 105e9);
  EXPECT_FALSE(row(rows, "full_shard", 8).fits);
  EXPECT_DOUBLE_EQ(row(rows, "full_shard", 16).total(), 52.5e9);
  EXPECT_TRUE(row(rows, "full_shard", 16).fits);
  // SHARD_GRAD_OP divides the same states but keeps every unit's weights gathered from forward to
  // backward: 140 GB of gathered bf16 weights alone rule out an 80 GB GPU at any N.
  EXPECT_DOUBLE_EQ(row(rows, "shard_grad_op", 16).gathered, 140e9);
  EXPECT_FALSE(row(rows, "shard_grad_op", 16).fits);
}

TEST(ModelStateTable, NoGpuMemoryMeansNoVerdict) {
  ModelStateCase c;
  c.gpuMemoryBytes = 0;
  for (const auto& r : modelStateTable(c)) EXPECT_TRUE(r.fits) << r.strategy << " x " << r.world;
}

// The ZeRO paper (Rajbhandari et al. 2020), Figure 1: 7.5B parameters, N_d = 64, K = 12 prints
// 120 GB for the baseline, 31.4 GB for P_os, 16.6 GB for P_os+g and 1.9 GB for P_os+g+p.
TEST(ModelStateTable, TheZeroPapersFigureOne) {
  ModelStateCase c;
  c.parameters = 7.5e9;
  c.bytes = {2, 2, 12};
  c.worlds = {64};
  const auto rows = modelStateTable(c);
  EXPECT_NEAR(row(rows, "ddp", 64).total() / 1e9, 120.0, 0.05);
  EXPECT_NEAR(row(rows, "zero1", 64).total() / 1e9, 31.4, 0.05);
  EXPECT_NEAR(row(rows, "deepspeed_zero2", 64).total() / 1e9, 16.6, 0.05);
  EXPECT_NEAR(row(rows, "full_shard", 64).total() / 1e9, 1.9, 0.05);
  // FSDP's SHARD_GRAD_OP holds its weight shard beside the gathered copy: W/N more than ZeRO-2.
  EXPECT_NEAR(row(rows, "shard_grad_op", 64).total() - row(rows, "deepspeed_zero2", 64).total(), 2 * 7.5e9 / 64, 1.0);
  EXPECT_DOUBLE_EQ(row(rows, "deepspeed_zero2", 64).weights, 15e9);
}

// The inverse of the seeds' Llama-70B example (2,2,8 B: 840 GB): FSDP needs more than 8 H100s and
// fits on 16; the fewest is 11 (76.4 GB). DDP never fits, nor ZeRO-1 (W + G = 280 GB on every GPU).
TEST(ModelStateTable, FewestGpusForLlama70B) {
  ModelStateCase c;
  c.parameters = 70e9;
  c.bytes = {2, 2, 8};
  c.gpuMemoryBytes = 80e9;
  const auto fewest = [&](const char* name) {
    for (const auto& s : modelStateStrategies()) {
      if (std::string(s.name) == name) return fewestGpus(c, s);
    }
    ADD_FAILURE() << name;
    return std::optional<int>{};
  };
  EXPECT_FALSE(fewest("ddp").has_value());
  EXPECT_FALSE(fewest("zero1").has_value());
  EXPECT_FALSE(fewest("deepspeed_zero2").has_value()) << "W = 140 GB stays whole";
  EXPECT_FALSE(fewest("shard_grad_op").has_value()) << "the gathered 140 GB stays whole";
  ASSERT_TRUE(fewest("full_shard").has_value());
  EXPECT_EQ(*fewest("full_shard"), 11);
  // A tenth kept free for activations: 72 GB for the model states, 840 / 72 -> 12 GPUs.
  c.reserve = 0.1;
  EXPECT_EQ(*fewest("full_shard"), 12);
  // 7B in 2,2,4 (56 GB) fits one 80 GB GPU under every strategy.
  c = ModelStateCase{};
  c.parameters = 7e9;
  c.bytes = {2, 2, 4};
  for (const auto& s : modelStateStrategies()) EXPECT_EQ(fewestGpus(c, s).value_or(-1), 1) << s.name;
}

// HSDP divides only among its shard group: Llama-70B (840 GB) with shard groups of 8 holds 105 GB
// per GPU at any N >= 8, so no number of 80 GB GPUs fits it; groups of 16 do, at 16 GPUs or more.
TEST(ModelStateTable, HybridShardDividesOnlyAmongItsShardGroup) {
  ModelStateCase c;
  c.parameters = 70e9;
  c.bytes = {2, 2, 8};
  c.gpuMemoryBytes = 80e9;
  c.shardGroupSize = 8;
  const ModelStateStrategy* hsdp = nullptr;
  for (const auto& s : modelStateStrategies()) {
    if (std::string(s.name) == "hybrid_shard") hsdp = &s;
  }
  ASSERT_NE(hsdp, nullptr);
  EXPECT_DOUBLE_EQ(modelStateRow(c, *hsdp, 8).total(), 105e9);
  EXPECT_DOUBLE_EQ(modelStateRow(c, *hsdp, 64).total(), 105e9) << "more replicas divide nothing further";
  EXPECT_DOUBLE_EQ(modelStateRow(c, *hsdp, 4).total(), 210e9) << "fewer GPUs than a group: one group of them";
  EXPECT_FALSE(fewestGpus(c, *hsdp).has_value());
  c.shardGroupSize = 16;
  ASSERT_TRUE(fewestGpus(c, *hsdp).has_value());
  EXPECT_EQ(*fewestGpus(c, *hsdp), 11) << "as full_shard: 11 GPUs, within one group of up to 16";
  EXPECT_DOUBLE_EQ(modelStateRow(c, *hsdp, 32).total(), 52.5e9);
}

// Tensor parallelism of 8 divides every model state 8 ways before a strategy divides the rest among
// the N/8 data-parallel ranks: Llama-70B at 2,2,12 B (1120 GB) on 64 GPUs holds 140 GB per GPU
// under ddp (1120 / 8) and 17.5 GB under full_shard (1120 / 64); shard_grad_op's gathered weights
// are the TP shard's whole weights, 140 / 8 GB. The fewest 80 GB GPUs are whole TP groups: full_shard
// needs 2 data-parallel ranks of 8 (70 GB each), 16 GPUs; ddp's 140 GB never fits.
TEST(ModelStateTable, TensorParallelismDividesFirstAndCountsGpusInWholeGroups) {
  ModelStateCase c;
  c.parameters = 70e9;
  c.bytes = {2, 2, 12};
  c.gpuMemoryBytes = 80e9;
  c.tensorParallel = {8, false};
  c.worlds = {4, 8, 64};
  const auto rows = modelStateTable(c);
  EXPECT_EQ(rows.size(), 2 * modelStateStrategies().size()) << "4 GPUs are not a group of 8: left out";
  EXPECT_DOUBLE_EQ(row(rows, "ddp", 64).total(), 140e9);
  EXPECT_DOUBLE_EQ(row(rows, "ddp", 8).total(), 140e9);
  EXPECT_DOUBLE_EQ(row(rows, "full_shard", 64).total(), 17.5e9);
  EXPECT_DOUBLE_EQ(row(rows, "full_shard", 8).total(), 140e9) << "one data-parallel rank divides nothing";
  EXPECT_DOUBLE_EQ(row(rows, "shard_grad_op", 64).gathered, 17.5e9);
  EXPECT_DOUBLE_EQ(row(rows, "zero1", 64).optimizer, 70e9 * 12 / 64);
  for (const auto& s : modelStateStrategies()) {
    const auto n = fewestGpus(c, s);
    if (std::string(s.name) == "full_shard") {
      ASSERT_TRUE(n.has_value());
      EXPECT_EQ(*n, 16);
      EXPECT_LE(modelStateRow(c, s, 16).total(), 80e9);
      EXPECT_GT(modelStateRow(c, s, 8).total(), 80e9);
    }
    if (n) EXPECT_EQ(*n % 8, 0) << s.name << ": whole groups of 8";
  }
  EXPECT_NEAR(largestModel(c, modelStateStrategies().front(), 64), 8 * 5e9, 1.0) << "ddp: 8 x a GPU's 5B";
}

// The largest model whose model states fit: 80 GB / 16 B per parameter = 5B on one GPU under any
// strategy; on 8 GPUs full_shard holds 8x that, ddp still 5B, and every answer fits exactly.
TEST(ModelStateTable, LargestModelForSoManyGpus) {
  ModelStateCase c;
  c.bytes = {2, 2, 12};
  c.gpuMemoryBytes = 80e9;
  for (const auto& s : modelStateStrategies()) {
    const bool gathers = s.keepsGatheredWeights;  // one GPU: its shard is the whole, plus the gathered copy
    EXPECT_NEAR(largestModel(c, s, 1), gathers ? 80e9 / 18 : 5e9, 1.0) << s.name;
    c.parameters = largestModel(c, s, 8);
    EXPECT_NEAR(modelStateRow(c, s, 8).total(), 80e9, 1.0) << s.name;
  }
  const auto& strategies = modelStateStrategies();
  EXPECT_NEAR(largestModel(c, strategies.front(), 8), 5e9, 1.0);  // ddp
  EXPECT_NEAR(largestModel(c, strategies.back(), 8), 40e9, 1.0);  // full_shard
}

TEST(ParseQuantity, Percentages) {
  EXPECT_DOUBLE_EQ(*parsePercent("10%"), 0.1);
  EXPECT_DOUBLE_EQ(*parsePercent("10"), 0.1);
  EXPECT_DOUBLE_EQ(*parsePercent("0"), 0.0);
  for (const char* bad : {"", "%", "100", "-5%", "ten", "10%%"}) EXPECT_FALSE(parsePercent(bad).has_value()) << bad;
}

TEST(ParseQuantity, CountsWithSuffixes) {
  EXPECT_DOUBLE_EQ(*parseCount("7B"), 7e9);
  EXPECT_DOUBLE_EQ(*parseCount("70b"), 70e9);
  EXPECT_DOUBLE_EQ(*parseCount("1.5M"), 1.5e6);
  EXPECT_DOUBLE_EQ(*parseCount("1.3e9"), 1.3e9);
  EXPECT_DOUBLE_EQ(*parseCount("2T"), 2e12);
  EXPECT_DOUBLE_EQ(*parseCount("124000000"), 124e6);
  for (const char* bad : {"", "B", "7X", "-7B", "0", "7BB", "seven", "nan", "inf"}) {
    EXPECT_FALSE(parseCount(bad).has_value()) << bad;
  }
}

TEST(ParseQuantity, BytesPerParameterAndWorlds) {
  auto b = parseBytesPerParameter("2,2,12");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->weights, 2);
  EXPECT_EQ(b->grads, 2);
  EXPECT_EQ(b->optimizer, 12);
  EXPECT_TRUE(parseBytesPerParameter("4,4,0"));
  for (const char* bad : {"", "2,2", "2,2,12,4", "2,,12", "2,2,-1", "a,b,c", "2,2,12,"}) {
    EXPECT_FALSE(parseBytesPerParameter(bad).has_value()) << bad;
  }
  EXPECT_EQ(*parseWorlds("1,8,16"), (std::vector<int>{1, 8, 16}));
  for (const char* bad : {"", "0", "1,,8", "2.5", "-1", "8,"}) {
    EXPECT_FALSE(parseWorlds(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace shardscope::estimate
