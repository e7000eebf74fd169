// What a rank records is what the strategy really did. Runs the real binary with --trace,
// --summary and --memory-csv and checks the FSDP life cycle per unit, the bytes on the wire against
// closed forms, and memory by role against the sharding arithmetic.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/models/model.h"
#include "engine/recording/tensor_files.h"
#include "tests/support/run_cli.h"

namespace shardscope::engine {
namespace {

constexpr int kWorld = 2;
constexpr int kLayers = 3;
constexpr int kSteps = 2;

config::RunConfig modelConfig() {
  config::RunConfig c;
  c.model = config::ModelKind::Gpt;
  c.layers = kLayers;
  c.hidden = 20;
  c.heads = 4;
  c.vocab = 37;
  c.seq = 6;
  return c;
}

struct Sizes {
  int64_t parameters = 0;            // elements
  int64_t rootPadded = 0;            // elements, padded to the world size
  std::vector<int64_t> blockPadded;  // elements
  int64_t paddedTotal() const {
    int64_t t = rootPadded;
    for (auto b : blockPadded) t += b;
    return t;
  }
};

Sizes sizes() {
  const auto units = config::unitElements(modelConfig());  // blocks 0..L-1, then the root
  Sizes s;
  auto pad = [](int64_t n) { return (n + kWorld - 1) / kWorld * kWorld; };
  for (int u = 0; u < kLayers; ++u) s.blockPadded.push_back(pad(units[u]));
  s.rootPadded = pad(units.back());
  for (int64_t n : units) s.parameters += n;
  return s;
}

struct Span {
  std::string kind;  // compute: forward/backward/step/optimizer; comm: the op
  std::string unit, phase;
  int step = -1;
  int microBatch = 0;
  double begin = 0, end = 0;  // microseconds
  int64_t bytes = 0, bytesOut = 0;
};

struct RankTrace {
  std::vector<Span> compute, comm;
  std::vector<std::pair<double, std::map<std::string, int64_t>>> memory;
};

struct Recorded {
  std::map<int, RankTrace> ranks;
  nlohmann::json summary;
  nlohmann::json runFacts;  // what the ranks reported of themselves, after the trace's events
  std::vector<std::map<std::string, int64_t>> lastCsvRow;  // per rank
};

Recorded runAndRead(const std::string& strategy, const std::vector<std::string>& extra = {},
                    const std::vector<std::string>& env = {}) {
  std::string name = "instrumentation_" + strategy;
  for (const auto& e : extra) name += "_" + e;
  for (const auto& e : env) name += "_" + e;
  const auto dir = testing::freshTempDir(name);
  std::vector<std::string> args = {"run",
                                   "--model",
                                   "gpt",
                                   "--layers",
                                   std::to_string(kLayers),
                                   "--hidden",
                                   "20",
                                   "--heads",
                                   "4",
                                   "--vocab",
                                   "37",
                                   "--seq",
                                   "6",
                                   "--batch",
                                   "4",
                                   "--steps",
                                   std::to_string(kSteps),
                                   "--world",
                                   std::to_string(kWorld),
                                   "--strategy",
                                   strategy,
                                   "--trace",
                                   dir + "/trace.json",
                                   "--summary",
                                   dir + "/summary.json",
                                   "--memory-csv",
                                   dir + "/memory.csv"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = testing::runShardscope(args, env);
  EXPECT_EQ(r.exitCode, 0) << r.output;
  Recorded out;
  auto trace = nlohmann::json::parse(std::ifstream(dir + "/trace.json"));
  for (const auto& e : trace["traceEvents"]) {
    if (!e.contains("pid")) continue;
    auto& rank = out.ranks[e["pid"].get<int>()];
    const std::string ph = e["ph"];
    if (ph == "X" && e.value("cat", "") == "pause") continue;  // waits at the step gate (step_gate_test)
    if (ph == "X") {
      Span s;
      s.begin = e["ts"].get<double>();
      s.end = s.begin + e["dur"].get<double>();
      const auto& a = e["args"];
      s.step = a["step"].get<int>();
      s.microBatch = a.value("micro_batch", 0);
      s.unit = a["unit"].get<std::string>();
      if (e["cat"] == "compute") {
        s.kind = a["kind"].get<std::string>();
        s.phase = a.value("phase", "");
        rank.compute.push_back(s);
      } else {
        s.kind = a["op"].get<std::string>();
        s.phase = a["phase"].get<std::string>();
        s.bytes = a["bytes"].get<int64_t>();
        s.bytesOut = a["bytes_out"].get<int64_t>();
        rank.comm.push_back(s);
      }
    } else if (ph == "C" && e["name"].get<std::string>().rfind("unit memory ", 0) == 0) {
      continue;  // per-unit counters ("who holds what"; unit_memory_test)
    } else if (ph == "C") {
      EXPECT_EQ(e["name"], "memory");
      rank.memory.emplace_back(e["ts"].get<double>(), e["args"].get<std::map<std::string, int64_t>>());
    }
  }
  out.summary = nlohmann::json::parse(std::ifstream(dir + "/summary.json"));
  out.runFacts = trace.value("shardscope_run", nlohmann::json());
  std::ifstream csv(dir + "/memory.csv");
  std::string header, line;
  std::getline(csv, header);
  std::vector<std::string> columns;
  std::stringstream hs(header);
  for (std::string c; std::getline(hs, c, ',');) columns.push_back(c);
  out.lastCsvRow.resize(kWorld);
  while (std::getline(csv, line)) {
    std::stringstream ls(line);
    std::map<std::string, int64_t> row;
    size_t i = 0;
    for (std::string v; std::getline(ls, v, ',') && i < columns.size(); ++i) {
      if (columns[i] != "space") row[columns[i]] = std::stoll(v);  // device: no --offload cpu here
    }
    out.lastCsvRow[row["rank"]] = row;
  }
  return out;
}

const Span& only(const std::vector<Span>& spans, const std::string& kind, const std::string& unit, int step,
                 const std::string& phase = "") {
  const Span* found = nullptr;
  int count = 0;
  for (const auto& s : spans) {
    if (s.kind == kind && s.unit == unit && s.step == step && (phase.empty() || s.phase == phase)) {
      found = &s;
      ++count;
    }
  }
  EXPECT_EQ(count, 1) << kind << " " << unit << " step " << step << " " << phase;
  static const Span none;
  return found ? *found : none;
}

// param_gathered rises and falls within each step span, with their sizes in bytes.
std::pair<std::vector<int64_t>, std::vector<int64_t>> gatheredChanges(const RankTrace& t, int step) {
  const Span& stepSpan = only(t.compute, "step", "", step);
  std::vector<int64_t> rises, falls;
  int64_t previous = -1;
  for (const auto& [ts, roles] : t.memory) {
    const int64_t now = roles.at("param_gathered");
    if (previous >= 0 && ts >= stepSpan.begin && ts <= stepSpan.end) {
      if (now > previous) rises.push_back(now - previous);
      if (now < previous) falls.push_back(previous - now);
    }
    previous = now;
  }
  std::sort(rises.begin(), rises.end());
  std::sort(falls.begin(), falls.end());
  return {rises, falls};
}

int64_t bytesPerStep(const RankTrace& t, const std::string& op, int step, bool output) {
  int64_t total = 0;
  for (const auto& c : t.comm) {
    if (c.kind == op && c.step == step && c.unit != "loss (logging)") total += output ? c.bytesOut : c.bytes;
  }
  return total;
}

TEST(Instrumentation, FullShardLifeCyclePerUnit) {
  const auto s = sizes();
  auto rec = runAndRead("full_shard");
  ASSERT_EQ(rec.ranks.size(), static_cast<size_t>(kWorld));
  for (const auto& [rank, t] : rec.ranks) {
    for (int step = 0; step < kSteps; ++step) {
      for (int u = 0; u < kLayers; ++u) {
        const std::string unit = "blocks." + std::to_string(u);
        const auto& agForward = only(t.comm, "all_gather", unit, step, "forward");
        const auto& forward = only(t.compute, "forward", unit, step);
        const auto& agBackward = only(t.comm, "all_gather", unit, step, "backward");
        const auto& backward = only(t.compute, "backward", unit, step);
        const auto& rs = only(t.comm, "reduce_scatter", unit, step);
        EXPECT_LE(agForward.end, forward.begin) << "rank " << rank << " " << unit;
        EXPECT_LE(forward.end, agBackward.begin) << "gathered again after forward: " << unit;
        EXPECT_LE(agBackward.end, backward.begin) << unit;
        EXPECT_LE(backward.end, rs.begin) << "reduce-scatter follows backward: " << unit;
        EXPECT_EQ(agForward.bytesOut, s.blockPadded[u] * 4);
        EXPECT_EQ(rs.bytes, s.blockPadded[u] * 4);
      }
      // Twice per block unit per step (forward and backward), once for the root, which FSDP2
      // keeps unsharded from the start of forward to the end of its backward.
      auto [rises, falls] = gatheredChanges(t, step);
      std::vector<int64_t> expected = {s.rootPadded * 4};
      for (auto b : s.blockPadded) expected.insert(expected.end(), {b * 4, b * 4});
      std::sort(expected.begin(), expected.end());
      EXPECT_EQ(rises, expected) << "rank " << rank << " step " << step;
      EXPECT_EQ(falls, expected) << "rank " << rank << " step " << step;

      EXPECT_EQ(bytesPerStep(t, "all_gather", step, true), (s.rootPadded + 2 * (s.paddedTotal() - s.rootPadded)) * 4);
      EXPECT_EQ(bytesPerStep(t, "reduce_scatter", step, false), s.paddedTotal() * 4);
      EXPECT_EQ(bytesPerStep(t, "all_reduce", step, false), 0);
    }
  }
  // Peak of gathered parameters: the root, the block computing and the next one, whose all-gather
  // was issued ahead (--prefetch 1, the default).
  int64_t largestPair = 0;
  for (size_t u = 0; u + 1 < s.blockPadded.size(); ++u) {
    largestPair = std::max(largestPair, s.blockPadded[u] + s.blockPadded[u + 1]);
  }
  for (const auto& r : rec.summary["ranks"]) {
    EXPECT_EQ(r["peak_bytes"]["param_gathered"].get<int64_t>(), (s.rootPadded + largestPair) * 4);
  }
}

// --prefetch N: before a unit computes, the all-gathers of the next N units are already issued (on
// CPU a collective's span starts at its issue); with 0, each is issued only when its unit is due.
TEST(Instrumentation, PrefetchIssuesTheNextAllGathersBeforeThisUnitComputes) {
  const auto s = sizes();
  for (int depth : {0, 1, 2}) {
    SCOPED_TRACE("--prefetch " + std::to_string(depth));
    auto rec = runAndRead("full_shard", {"--prefetch", std::to_string(depth)});
    for (const auto& [rank, t] : rec.ranks) {
      for (int step = 0; step < kSteps; ++step) {
        for (int u = 0; u + 1 < kLayers; ++u) {
          const std::string unit = "blocks." + std::to_string(u);
          const auto& forward = only(t.compute, "forward", unit, step);
          for (int ahead = 1; u + ahead < kLayers; ++ahead) {
            const auto& ag = only(t.comm, "all_gather", "blocks." + std::to_string(u + ahead), step, "forward");
            if (ahead <= depth) {
              EXPECT_LE(ag.begin, forward.begin) << unit << " +" << ahead;
            } else {
              EXPECT_GE(ag.begin, forward.end) << unit << " +" << ahead;
            }
          }
        }
      }
    }
    // Gathered parameters at their peak: the root and depth+1 consecutive blocks.
    int64_t window = 0;
    for (size_t u = 0; u < s.blockPadded.size(); ++u) {
      int64_t sum = 0;
      for (size_t k = u; k < std::min(s.blockPadded.size(), u + depth + 1); ++k) sum += s.blockPadded[k];
      window = std::max(window, sum);
    }
    for (const auto& r : rec.summary["ranks"]) {
      EXPECT_EQ(r["peak_bytes"]["param_gathered"].get<int64_t>(), (s.rootPadded + window) * 4);
    }
  }
}

// --precision bf16: the all-gathers move bf16 copies of the shards (FSDP2's param_dtype), so every
// gathered byte count is half of fp32's; shards and reduce-scatters stay fp32.
TEST(Instrumentation, Bf16GathersHalfTheBytesAndReducesInFp32) {
  const auto s = sizes();
  auto rec = runAndRead("full_shard", {"--precision", "bf16"});
  for (const auto& [rank, t] : rec.ranks) {
    for (int step = 0; step < kSteps; ++step) {
      for (int u = 0; u < kLayers; ++u) {
        const std::string unit = "blocks." + std::to_string(u);
        EXPECT_EQ(only(t.comm, "all_gather", unit, step, "forward").bytesOut, s.blockPadded[u] * 2);
        EXPECT_EQ(only(t.comm, "reduce_scatter", unit, step).bytes, s.blockPadded[u] * 4);
      }
      auto [rises, falls] = gatheredChanges(t, step);
      std::vector<int64_t> expected = {s.rootPadded * 2};
      for (auto b : s.blockPadded) expected.insert(expected.end(), {b * 2, b * 2});
      std::sort(expected.begin(), expected.end());
      EXPECT_EQ(rises, expected) << "rank " << rank << " step " << step;
    }
  }
  for (const auto& r : rec.summary["ranks"]) {
    EXPECT_EQ(r["peak_bytes"]["param_shard"].get<int64_t>(), s.paddedTotal() / kWorld * 4);
  }
}

// Gloo stages every collective in flat buffers of its own, allocated as the collective is issued
// and on Gloo's worker threads while the training thread computes. They are communication memory,
// never whatever role the training thread happens to be in. Under fp32, forward allocates no
// communication buffer of shardscope's own (the shard is sent as it is), so what the comm_buffer
// lane shows in forward is Gloo's staging of its own all-gathers: at least one unit's gathered
// bytes. Broadcast from each rank (the default on Gloo), the parts land in place: nothing staged.
// What forward stages is read as a rise above the lowest level of the step so far: Gloo's worker
// thread drops its reference to the last step's reduce-scatter buffer only when it next runs, so on
// a loaded machine that buffer (one block, allocated in backward) can still be held, and freed,
// well into the next step's forward. It is held (the lane is right to show it), but not staged there.
TEST(Instrumentation, GlooStagingBuffersAreCommBuffers) {
  const auto s = sizes();
  const int64_t smallestBlock = *std::min_element(s.blockPadded.begin(), s.blockPadded.end()) * 4;
  for (const bool glooOwn : {true, false}) {
    const std::vector<std::string> env = {glooOwn ? "SHARDSCOPE_GLOO_ALL_GATHER=native"
                                                  : "SHARDSCOPE_GLOO_ALL_GATHER=broadcasts"};
    auto rec = runAndRead("full_shard", {}, env);
    for (const auto& [rank, t] : rec.ranks) {
      for (int step = 0; step < kSteps; ++step) {
        const Span& stepSpan = only(t.compute, "step", "", step);
        double backwardBegins = stepSpan.end;
        for (const auto& c : t.compute) {
          if (c.step == step && c.kind == "backward") {
            backwardBegins = std::min(backwardBegins, c.begin);
          }
        }
        int64_t commAtStart = 0;  // held as the step began: the latest sample before it
        double latestBefore = -1;
        for (const auto& [ts, roles] : t.memory) {
          if (ts < stepSpan.begin && ts >= latestBefore) {
            latestBefore = ts;
            commAtStart = roles.at("comm_buffer");
          }
        }
        int64_t commInForward = 0, commLowest = commAtStart, otherLow = INT64_MAX, otherHigh = 0;
        for (const auto& [ts, roles] : t.memory) {
          if (ts < stepSpan.begin || ts > stepSpan.end) continue;
          const int64_t comm = roles.at("comm_buffer");
          commLowest = std::min(commLowest, comm);
          if (ts < backwardBegins) commInForward = std::max(commInForward, comm - commLowest);
          otherLow = std::min(otherLow, roles.at("other"));
          otherHigh = std::max(otherHigh, roles.at("other"));
        }
        if (glooOwn) {
          EXPECT_GE(commInForward, smallestBlock) << "rank " << rank << " step " << step;
        } else {
          EXPECT_LT(commInForward, smallestBlock) << "rank " << rank << " step " << step;
        }
        EXPECT_LT(otherHigh - otherLow, smallestBlock)
            << "nothing of a collective's size is left unattributed: rank " << rank << " step " << step
            << (glooOwn ? " (Gloo's all-gather)" : " (broadcasts)");
      }
    }
  }
}

TEST(Instrumentation, ShardGradOpGathersOncePerStep) {
  const auto s = sizes();
  auto rec = runAndRead("shard_grad_op");
  for (const auto& [rank, t] : rec.ranks) {
    for (int step = 0; step < kSteps; ++step) {
      auto [rises, falls] = gatheredChanges(t, step);
      EXPECT_EQ(rises.size(), static_cast<size_t>(kLayers + 1)) << "rank " << rank;
      EXPECT_EQ(falls.size(), static_cast<size_t>(kLayers + 1)) << "rank " << rank;
      EXPECT_EQ(bytesPerStep(t, "all_gather", step, true), s.paddedTotal() * 4);
      EXPECT_EQ(bytesPerStep(t, "reduce_scatter", step, false), s.paddedTotal() * 4);
    }
  }
  for (const auto& r : rec.summary["ranks"]) {
    EXPECT_EQ(r["peak_bytes"]["param_gathered"].get<int64_t>(), s.paddedTotal() * 4)
        << "every unit stays gathered from its forward to its backward";
  }
}

// Under --accumulate K a step gathers each unit K times: each collective and compute span says which
// micro-batch it belongs to, so the timeline can tell the K all-gathers of one unit apart. Gradients
// are reduced in the last micro-batch only; the optimizer steps outside every micro-batch.
TEST(Instrumentation, AccumulationTagsEachMicroBatchsSpans) {
  for (const std::string strategy : {"full_shard", "ddp"}) {
    auto rec = runAndRead(strategy, {"--accumulate", "2"});
    for (const auto& [rank, t] : rec.ranks) {
      for (int step = 0; step < kSteps; ++step) {
        std::map<int, std::multiset<std::string>> forwardGathers, forwardSpans;
        std::map<int, int> reductions;
        for (const auto& c : t.comm) {
          if (c.step != step || c.unit == "loss (logging)") continue;
          if (c.kind == "all_gather" && c.phase == "forward") forwardGathers[c.microBatch].insert(c.unit);
          if (c.kind == "reduce_scatter" || c.kind == "all_reduce") ++reductions[c.microBatch];
        }
        for (const auto& s : t.compute) {
          if (s.step != step) continue;
          if (s.kind == "forward") forwardSpans[s.microBatch].insert(s.unit);
          if (s.kind == "optimizer" || s.kind == "step") EXPECT_EQ(s.microBatch, 0) << s.kind;
        }
        const std::string where = strategy + " rank " + std::to_string(rank) + " step " + std::to_string(step);
        ASSERT_EQ(forwardSpans.size(), 2u) << where;
        EXPECT_EQ(forwardSpans[1], forwardSpans[2]) << where << ": every unit runs forward once per micro-batch";
        for (int u = 0; u < kLayers; ++u) EXPECT_EQ(forwardSpans[1].count("blocks." + std::to_string(u)), 1u) << where;
        if (strategy == "full_shard") {
          ASSERT_EQ(forwardGathers.size(), 2u) << where;
          EXPECT_EQ(forwardGathers[1], forwardGathers[2]) << where << ": each unit gathered once per micro-batch";
          for (int u = 0; u < kLayers; ++u)
            EXPECT_EQ(forwardGathers[1].count("blocks." + std::to_string(u)), 1u) << where;
        } else {
          EXPECT_TRUE(forwardGathers.empty()) << where;
        }
        EXPECT_EQ(reductions.count(1), 0u) << where << ": no gradient is reduced before the last micro-batch";
        EXPECT_GT(reductions[2], 0) << where;
      }
    }
  }
}

// Activation checkpointing under full_shard: each block's backward all-gather is followed by its
// forward again (the recomputation, a forward span in the backward phase) and then its backward;
// the root, not checkpointed, runs forward once.
TEST(Instrumentation, CheckpointedBlocksRecomputeBetweenTheirGatherAndBackward) {
  auto rec = runAndRead("full_shard", {"--activation-checkpointing", "blocks"});
  for (const auto& [rank, t] : rec.ranks) {
    for (int step = 0; step < kSteps; ++step) {
      for (int u = 0; u < kLayers; ++u) {
        const std::string unit = "blocks." + std::to_string(u);
        const auto& forward = only(t.compute, "forward", unit, step, "forward");
        const auto& gather = only(t.comm, "all_gather", unit, step, "backward");
        const auto& again = only(t.compute, "forward", unit, step, "backward");
        const auto& backward = only(t.compute, "backward", unit, step);
        EXPECT_LE(forward.end, gather.begin) << "rank " << rank << " " << unit;
        EXPECT_LE(gather.end, again.begin) << "recomputed with the unit gathered: " << unit;
        EXPECT_LE(again.end, backward.begin) << unit;
      }
      int rootForwards = 0;
      for (const auto& s : t.compute) rootForwards += s.step == step && s.kind == "forward" && s.unit == "root";
      EXPECT_EQ(rootForwards, 2) << "the root's two stages (embedding and head), each once, not recomputed";
    }
  }
}

TEST(Instrumentation, DdpAllReducesEveryGradientByteOnceAndShardingDividesMemory) {
  const auto s = sizes();
  auto ddp = runAndRead("ddp");
  auto fsdp = runAndRead("full_shard");
  for (const auto& [rank, t] : ddp.ranks) {
    for (int step = 0; step < kSteps; ++step) {
      auto [rises, falls] = gatheredChanges(t, step);
      EXPECT_TRUE(rises.empty() && falls.empty()) << "ddp never gathers";
      EXPECT_EQ(bytesPerStep(t, "all_reduce", step, false), s.parameters * 4);
      EXPECT_EQ(bytesPerStep(t, "all_gather", step, true), 0);
    }
  }
  const int64_t shardBytes = s.paddedTotal() / kWorld * 4;
  for (int r = 0; r < kWorld; ++r) {
    const auto& dp = ddp.summary["ranks"][r]["peak_bytes"];
    const auto& fp = fsdp.summary["ranks"][r]["peak_bytes"];
    EXPECT_EQ(dp["param_shard"].get<int64_t>(), s.parameters * 4);
    EXPECT_EQ(dp["grad_full"].get<int64_t>(), s.parameters * 4);
    EXPECT_EQ(fp["param_shard"].get<int64_t>(), shardBytes);
    EXPECT_EQ(fp["grad_shard"].get<int64_t>(), shardBytes);
    // Adam state at the end of the last step (its transient temporaries are freed by then).
    const int64_t ddpState = ddp.lastCsvRow[r]["optimizer_state"];
    const int64_t fsdpState = fsdp.lastCsvRow[r]["optimizer_state"];
    EXPECT_EQ(ddpState, 2 * s.parameters * 4);
    EXPECT_EQ(fsdpState, 2 * shardBytes);
    const int64_t ddpTotal = dp["param_shard"].get<int64_t>() + dp["grad_full"].get<int64_t>() + ddpState;
    const int64_t fsdpTotal = fp["param_shard"].get<int64_t>() + fp["grad_shard"].get<int64_t>() + fsdpState;
    // Exactly 1/N, up to the padding of each unit to a multiple of N.
    EXPECT_EQ(fsdpTotal * kWorld - ddpTotal, 16 * (s.paddedTotal() - s.parameters));
    EXPECT_LT(s.paddedTotal() - s.parameters, static_cast<int64_t>(kLayers + 1) * kWorld);
  }
}

TEST(Instrumentation, TraceHasRankProcessesAndNamedTracks) {
  auto rec = runAndRead("full_shard");
  for (int r = 0; r < kWorld; ++r) {
    ASSERT_TRUE(rec.ranks.count(r));
    EXPECT_FALSE(rec.ranks[r].compute.empty());
    EXPECT_FALSE(rec.ranks[r].comm.empty());
    ASSERT_FALSE(rec.ranks[r].memory.empty());
    for (const char* role : {"param_shard", "param_gathered", "grad_shard", "grad_full", "optimizer_state",
                             "activation", "comm_buffer", "other"}) {
      EXPECT_TRUE(rec.ranks[r].memory.front().second.count(role)) << role;
    }
    const auto& ranks = rec.summary["ranks"][r];
    EXPECT_GT(ranks["throughput"]["tokens_per_s"].get<double>(), 0);
    EXPECT_GT(ranks["collectives"]["all_gather"]["count"].get<int>(), 0);
    EXPECT_EQ(ranks["dropped_events"].get<int>(), 0);
    // Each rank's placement is kept in the trace, for the trace opened again.
    EXPECT_EQ(rec.runFacts["rank_placements"][r], ranks["placement"]);
  }
  EXPECT_EQ(rec.runFacts["rank_placements"].size(), static_cast<size_t>(kWorld));
  EXPECT_EQ(rec.runFacts["parameter_count"], rec.summary["parameter_count"]);
  EXPECT_GT(rec.runFacts["parameter_count"].get<int64_t>(), 0);
  EXPECT_EQ(rec.runFacts["device_memory_bytes"], 0) << "CPU ranks have no device memory to report";
}

}  // namespace
}  // namespace shardscope::engine

namespace shardscope::engine {
namespace {

// A small run on three ranks (full_shard unless said) that exports its final parameters, under `env`.
std::string composedRun(const std::string& name, const std::vector<std::string>& env,
                        const std::string& strategy = "full_shard") {
  const auto dir = testing::freshTempDir(name);
  auto r = testing::runShardscope(
      {"run", "--model", "mlp", "--hidden", "13", "--layers", "2", "--world", "3", "--batch", "6", "--steps", "2",
       "--strategy", strategy, "--export", dir, "--trace", dir + "/trace.json"},
      env);
  EXPECT_EQ(r.exitCode, 0) << r.output;
  return dir;
}

std::set<std::string> implementationsOf(const std::string& dir, const std::string& op) {
  std::set<std::string> out;
  auto trace = nlohmann::json::parse(std::ifstream(dir + "/trace.json"));
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("cat", "") == "comm" && e["args"]["op"] == op) {
      out.insert(e["args"]["implementation"].get<std::string>());
    }
  }
  return out;
}

void expectSameFinalParameters(const std::string& dirA, const std::string& dirB) {
  auto a = loadTensorDict(dirA + "/final.pt");
  auto b = loadTensorDict(dirB + "/final.pt");
  ASSERT_FALSE(a.empty());
  for (const auto& [name, t] : a) {
    const double scale = std::max(t.abs().max().item<double>(), 1e-12);
    EXPECT_LE((t - b[name]).abs().max().item<double>() / scale, 1e-5) << name;
  }
}

// Where the backend lacks reduce-scatter, it is built from all-reduce + slice, named so in the
// events, and trains to the same parameters.
TEST(Instrumentation, ComposedReduceScatterIsNamedAndEquivalent) {
  const auto native = composedRun("rs_native", {});
  const auto composed = composedRun("rs_composed", {"SHARDSCOPE_GLOO_REDUCE_SCATTER=all_reduce"});
  EXPECT_EQ(implementationsOf(native, "reduce_scatter"), std::set<std::string>{"reduce_scatter"});
  EXPECT_EQ(implementationsOf(composed, "reduce_scatter"), std::set<std::string>{"reduce_scatter(all_reduce+slice)"});
  expectSameFinalParameters(native, composed);
}

// On Gloo, ranks all-gather by one broadcast from each rank (faster than Gloo's own, which stages
// the output): named so in the events, and the same parameters as Gloo's own all-gather gives,
// whether the rank's part is copied into place (full_shard's shard) or already there (zero1's
// slice of its flat parameters).
TEST(Instrumentation, AllGatherFromBroadcastsIsNamedAndEquivalent) {
  for (const std::string strategy : {"full_shard", "zero1"}) {
    const auto broadcasts = composedRun("ag_broadcasts_" + strategy, {}, strategy);
    const auto native = composedRun("ag_native_" + strategy, {"SHARDSCOPE_GLOO_ALL_GATHER=native"}, strategy);
    EXPECT_EQ(implementationsOf(broadcasts, "all_gather"),
              std::set<std::string>{"all_gather(broadcast from each rank)"})
        << strategy;
    EXPECT_EQ(implementationsOf(native, "all_gather"), std::set<std::string>{"all_gather"}) << strategy;
    expectSameFinalParameters(broadcasts, native);
  }
}

// Ranks started with different settings (torchrun on two hosts, each its own environment) are
// told so by name before any collective, rather than waiting out Gloo's timeout.
TEST(Instrumentation, RanksWithDifferentAllGatherSettingsAreRefused) {
  const auto results = testing::runWorkerJob(testing::tinyGptConfig(), {}, {{}, {"SHARDSCOPE_GLOO_ALL_GATHER=native"}});
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) {
    EXPECT_NE(r.exitCode, 0) << r.output;
    EXPECT_NE(r.output.find("set them alike on every host"), std::string::npos) << r.output;
    EXPECT_LT(r.seconds, 60.0) << r.output;
  }
  EXPECT_NE(results[0].output.find("as 'all_gather=broadcasts reduce_scatter=native' and rank 1 as "
                                   "'all_gather=native reduce_scatter=native'"),
            std::string::npos)
      << results[0].output;
}

TEST(Instrumentation, UnknownAllGatherSettingIsRefusedByName) {
  const auto dir = testing::freshTempDir("ag_unknown");
  auto r = testing::runShardscope({"run", "--model", "mlp", "--hidden", "13", "--layers", "2", "--world", "2",
                                   "--batch", "4", "--steps", "1", "--strategy", "full_shard"},
                                  {"SHARDSCOPE_GLOO_ALL_GATHER=tree"});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.output.find("SHARDSCOPE_GLOO_ALL_GATHER is 'tree'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("'native'"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace shardscope::engine
