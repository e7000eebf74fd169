// No file crashes a reader. A real run's trace, summary and config are mutated, seeded (byte
// flips, cuts, spans deleted or repeated, numbers swapped for extremes and wrong types, deep
// nesting), and each mutant is read as `view` and `run --config` read it, then the figures are
// computed from what loaded: it must load or be refused with a message, never crash or throw.
// CI reads 350 mutants; bench/fuzz_loaders.py runs the same for minutes
// (SHARDSCOPE_FUZZ_ITERATIONS, SHARDSCOPE_FUZZ_SEED).
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <limits>
#include <fstream>
#include <random>
#include <sstream>

#include "tests/support/run_cli.h"
#include "stats/first_mismatch.h"
#include "stats/hang_summary.h"
#include "stats/run_stats.h"
#include "stats/summary_reader.h"
#include "import/flight_recorder.h"
#include "trace/perfetto_reader.h"
#include "trace/rank_event_files.h"
#include "import/profiler_trace.h"
#include "trace/trace_reader.h"
#include "files/user_json.h"

namespace shardscope::trace {
namespace {

int envInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

class Mutator {
 public:
  explicit Mutator(uint32_t seed) : random_(seed) {}

  std::string mutate(std::string text) {
    const int edits = 1 + pick(4);
    for (int i = 0; i < edits && !text.empty(); ++i) text = mutateOnce(std::move(text));
    return text;
  }

 private:
  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(random_); }

  // The start and length of a number somewhere after `from`, or npos.
  std::pair<size_t, size_t> numberAfter(const std::string& text, size_t from) {
    const size_t start = text.find_first_of("-0123456789", from);
    if (start == std::string::npos) return {std::string::npos, 0};
    const size_t end = text.find_first_not_of("-+.eE0123456789", start);
    return {start, (end == std::string::npos ? text.size() : end) - start};
  }

  std::string mutateOnce(std::string text) {
    static const char* kValues[] = {"-1",
                                    "1e400",
                                    "-1e400",
                                    "1e308",
                                    "0.5",
                                    "-0",
                                    "NaN",
                                    "true",
                                    "null",
                                    "\"x\"",
                                    "[]",
                                    "{}",
                                    "99999999999999999999",
                                    "-9223372036854775809",
                                    "2147483648",
                                    "\"\\ud800\"",
                                    "\""
                                    "\xff\xfe"
                                    "\""};
    const size_t at = pick(text.size());
    switch (pick(7)) {
      case 0:  // flip bytes
        for (int i = 0; i < 1 + static_cast<int>(pick(8)); ++i)
          text[pick(text.size())] ^= static_cast<char>(1 + pick(255));
        return text;
      case 1:  // cut
        return text.substr(0, at);
      case 2:  // delete a span
        return text.erase(at, 1 + pick(std::min<size_t>(text.size() - at, 2000)));
      case 3:  // repeat a span
        return text.insert(at, text.substr(at, 1 + pick(std::min<size_t>(text.size() - at, 2000))));
      case 4: {  // a number becomes an extreme, or another type
        const auto [start, length] = numberAfter(text, at);
        if (start == std::string::npos) return text;
        return text.replace(start, length, kValues[pick(std::size(kValues))]);
      }
      case 5: {  // deep nesting where a value was
        const auto [start, length] = numberAfter(text, at);
        if (start == std::string::npos) return text;
        const size_t depth = 1 + pick(200);
        return text.replace(start, length, std::string(depth, '[') + std::string(depth, ']'));
      }
      default: {  // a string value becomes another
        const size_t quote = text.find('"', at);
        const size_t close = quote == std::string::npos ? quote : text.find('"', quote + 1);
        if (close == std::string::npos) return text;
        return text.replace(quote, close - quote + 1, kValues[pick(std::size(kValues))]);
      }
    }
  }

  std::mt19937 random_;
};

// Mutates the parsed file instead: any node (a leaf, an event, the whole event list) becomes an
// extreme or a value of another type, so the file stays valid JSON and reaches the code that
// reads the values, not only the parser. The node is put back after each mutant is written.
class TreeMutator {
 public:
  TreeMutator(const std::string& text, uint32_t seed) : tree_(nlohmann::json::parse(text)), random_(seed) {
    collect(tree_);
  }

  // One node per mutant: replacing a node frees its children, so a second pick could be one of them.
  std::string mutate() {
    nlohmann::json* node = nodes_[pick(nodes_.size())];
    nlohmann::json original = std::move(*node);
    *node = strangeValue();
    std::string text = tree_.dump();
    *node = std::move(original);
    return text;
  }

 private:
  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(random_); }

  void collect(nlohmann::json& node) {
    nodes_.push_back(&node);
    if (node.is_structured()) {
      for (auto& child : node) collect(child);
    }
  }

  nlohmann::json strangeValue() {
    switch (pick(14)) {
      case 0:
        return -1;
      case 1:
        return 1e300;
      case 2:
        return -1e300;
      case 3:
        return 0.5;
      case 4:
        return std::numeric_limits<int64_t>::min();
      case 5:
        return std::numeric_limits<uint64_t>::max();
      case 6:
        return 2147483648LL;
      case 7:
        return true;
      case 8:
        return nullptr;
      case 9:
        return "x";
      case 10:
        return nlohmann::json::array();
      case 11:
        return nlohmann::json::object();
      case 12:
        return std::string(1 + pick(5000), 'y');
      default: {
        nlohmann::json deep = 1;
        for (size_t d = pick(100); d > 0; --d) deep = nlohmann::json::array({deep});
        return deep;
      }
    }
  }

  nlohmann::json tree_;
  std::vector<nlohmann::json*> nodes_;
  std::mt19937 random_;
};

struct Seeds {
  std::string trace, summary, config, dir;
};

// One real run's files: what users open is what shardscope wrote, not a hand-made fixture.
const Seeds& seeds() {
  static const Seeds s = [] {
    Seeds out;
    out.dir = testing::freshTempDir("loader_fuzz");
    const auto r = testing::runShardscope({"run", "--model", "gpt", "--layers", "2", "--hidden", "16", "--steps", "2",
                                           "--trace", out.dir + "/t.json", "--summary", out.dir + "/s.json"});
    if (r.exitCode != 0) return out;
    out.trace = testing::fileContents(out.dir + "/t.json");
    out.summary = testing::fileContents(out.dir + "/s.json");
    out.config = nlohmann::json::parse(out.summary)["config"].dump(1);
    return out;
  }();
  return s;
}

// Reads `text` as `view FILE` does (a trace, or a summary), then computes the figures the view
// draws from what loaded. Returns whether it loaded.
bool viewRead(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  if (looksLikeChromeTrace(path)) {
    const auto loaded = loadChromeTrace(path);
    if (!loaded.error.empty()) return false;
    (void)stats::computeRankStats(loaded.config, loaded.recording, 0);
    return true;
  }
  return stats::loadSummary(path).error.empty();
}

bool configRead(const std::string& text) {
  const auto parsed = files::parseUserJson(text, /*allowComments=*/true);
  if (!parsed.error.empty()) return false;
  config::RunConfig config;
  if (config::applyConfigJson(parsed.value, config)) return false;
  return !config::validate(config).has_value();
}

// 150 mutants (times SHARDSCOPE_FUZZ_ITERATIONS) written to `path` and loaded: each loads (and
// its figures are computed) or is refused naming `fileName`. (loaded, read).
std::pair<int, int> fuzzRead(const std::string& path, const std::function<std::string(int)>& mutant,
                             const std::function<LoadedTrace()>& load, const std::string& fileName) {
  int loaded = 0, read = 0;
  for (int i = 0; i < 150 * envInt("SHARDSCOPE_FUZZ_ITERATIONS", 1); ++i, ++read) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << mutant(i);
    const auto trace = load();
    if (!trace.error.empty()) {
      EXPECT_NE(trace.error.find(fileName), std::string::npos) << "names the file: " << trace.error;
      continue;
    }
    (void)stats::computeRankStats(trace.config, trace.recording, 0);
    ++loaded;
  }
  return {loaded, read};
}

TEST(LoaderFuzz, NoMutatedTraceSummaryOrConfigCrashesItsReader) {
  const Seeds& s = seeds();
  ASSERT_FALSE(s.trace.empty()) << "the seed run failed";
  const int scale = envInt("SHARDSCOPE_FUZZ_ITERATIONS", 1);
  const uint32_t seed = static_cast<uint32_t>(envInt("SHARDSCOPE_FUZZ_SEED", 20261124));
  Mutator bytes(seed);
  TreeMutator traceTree(s.trace, seed + 1), summaryTree(s.summary, seed + 2), configTree(s.config, seed + 3);
  int traces = 0, summaries = 0, configs = 0, loaded = 0;
  // Half the mutants byte-level (most end at the parser), half tree-level (all reach the reader).
  for (int round = 0; round < scale; ++round) {
    for (int i = 0; i < 150; ++i, ++traces) {
      loaded += viewRead(s.dir + "/m.json", i % 2 ? traceTree.mutate() : bytes.mutate(s.trace));
    }
    for (int i = 0; i < 100; ++i, ++summaries) {
      loaded += viewRead(s.dir + "/m.json", i % 2 ? summaryTree.mutate() : bytes.mutate(s.summary));
    }
    for (int i = 0; i < 100; ++i, ++configs) loaded += configRead(i % 2 ? configTree.mutate() : bytes.mutate(s.config));
  }
  // Reaching here is the test: every mutant was read or refused without a crash or an exception.
  std::printf("fuzzed %d traces, %d summaries, %d configs (seed %u): %d still loaded, %d refused\n", traces, summaries,
              configs, seed, loaded, traces + summaries + configs - loaded);
  EXPECT_GE(traces + summaries + configs, 350);
  EXPECT_GT(loaded, 0) << "some mutants (a changed number) are still valid files";
  EXPECT_LT(loaded, traces + summaries + configs) << "the mutations must break files too";
}

// A run's Perfetto trace (--trace FILE.pftrace), its bytes mutated the same ways (flips, cuts,
// spans deleted or repeated): read or refused naming the file, never a crash or an exception.
TEST(LoaderFuzz, NoMutatedPerfettoTraceCrashesItsReader) {
  const std::string dir = testing::freshTempDir("perfetto_fuzz");
  const auto r = testing::runShardscope({"run", "--model", "gpt", "--layers", "2", "--hidden", "16", "--steps", "2",
                                         "--strategy", "full_shard", "--trace", dir + "/t.pftrace"});
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const std::string seedTrace = testing::fileContents(dir + "/t.pftrace");
  ASSERT_FALSE(seedTrace.empty());
  const uint32_t seed = static_cast<uint32_t>(envInt("SHARDSCOPE_FUZZ_SEED", 20261124));
  Mutator bytes(seed + 5);
  const auto [loaded, read] = fuzzRead(
      dir + "/m.pftrace", [&](int) { return bytes.mutate(seedTrace); },
      [&] { return loadPerfettoTrace(dir + "/m.pftrace"); }, "m.pftrace");
  std::printf("fuzzed %d Perfetto traces: %d still loaded, %d refused\n", read, loaded, read - loaded);
  EXPECT_LT(loaded, read) << "the mutations must break traces too";
  // Cut where a packet ends (a file whose writer stopped between packets), it still loads: the
  // reader refuses damage, not a shorter trace.
  int cutsLoaded = 0;
  for (size_t at = 0, packets = 0; at < seedTrace.size() && packets < 40; ++packets) {
    size_t length = 0, shift = 0, i = at + 1;
    for (; i < seedTrace.size(); ++i, shift += 7) {
      length |= static_cast<size_t>(static_cast<uint8_t>(seedTrace[i]) & 0x7f) << shift;
      if (!(static_cast<uint8_t>(seedTrace[i]) & 0x80)) break;
    }
    at = i + 1 + length;
    std::ofstream(dir + "/cut.pftrace", std::ios::binary | std::ios::trunc) << seedTrace.substr(0, at);
    const auto trace = loadPerfettoTrace(dir + "/cut.pftrace");
    EXPECT_TRUE(trace.error.empty()) << "cut after packet " << packets << ": " << trace.error;
    cutsLoaded += trace.error.empty();
  }
  EXPECT_EQ(cutsLoaded, 40);
}

// A torch.profiler trace (`view DIR` of a PyTorch job's own records), mutated the same ways: read
// or refused naming its file, never a crash. The seed holds what the reader takes: a step, FSDP2's
// hooks, a c10d op and gloo's span, memory events, and the older layouts' lone records of a
// collective (record_param_comms, nccl:all_to_all, an NCCL kernel and a launch), the groups
// distributedInfo lists and a record names (pg_config, a pipeline's "mesh_pp" among them, "Process
// Group Ranks"), and what an unlabelled pipeline's order is read from (a forward, a send, a backward),
// the send inside the span the multi-stage runtime names a transfer by ("PP:0SEND_F1").
TEST(LoaderFuzz, NoMutatedProfilerTraceCrashesItsReader) {
  const std::string seedTrace = R"json({"schemaVersion": 1, "distributedInfo": {"rank": 0, "world_size": 1,
    "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "pg_size": 1, "ranks": [0]},
                  {"pg_name": "1", "pg_desc": "mesh_tp", "pg_size": 1, "ranks": [0]},
                  {"pg_name": "2", "pg_desc": "mesh_pp", "pg_size": 1, "ranks": [0]}]},
    "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 1000, "dur": 5000},
    {"ph": "X", "cat": "user_annotation", "name": "FSDP::pre_forward (0)", "pid": 1, "tid": 1, "ts": 1000, "dur": 400},
    {"ph": "X", "cat": "user_annotation", "name": "FSDP::all_gather (0)", "pid": 1, "tid": 1, "ts": 1010, "dur": 300},
    {"ph": "X", "cat": "cpu_op", "name": "c10d::_allgather_base_", "pid": 1, "tid": 1, "ts": 1020, "dur": 20,
     "args": {"Input Dims": [[2048], [1024]], "Input type": ["float", "float"]}},
    {"ph": "X", "cat": "user_annotation", "name": "gloo:all_gather", "pid": 1, "tid": 2, "ts": 1030, "dur": 250},
    {"ph": "X", "cat": "user_annotation", "name": "FSDP::post_forward (0)", "pid": 1, "tid": 1, "ts": 3000, "dur": 50},
    {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 3100, "dur": 20},
    {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 1, "ts": 3101, "dur": 15},
    {"ph": "X", "cat": "user_annotation", "name": "PP:0SEND_F1", "pid": 1, "tid": 1, "ts": 3128, "dur": 14},
    {"ph": "X", "cat": "cpu_op", "name": "c10d::send", "pid": 1, "tid": 1, "ts": 3130, "dur": 10},
    {"ph": "X", "cat": "user_annotation", "name": "gloo:send", "pid": 1, "tid": 1, "ts": 3135, "dur": 300},
    {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: AddmmBackward0", "pid": 1, "tid": 1,
     "ts": 3200, "dur": 20},
    {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 3500, "dur": 30,
     "args": {"Collective name": "broadcast", "In msg nelems": 100, "dtype": "Float", "Group size": 1,
              "Process Group Ranks": "[0]", "Process Group Description": "mesh_tp"}},
    {"ph": "X", "cat": "user_annotation", "name": "nccl:all_to_all", "pid": 1, "tid": 1, "ts": 3600, "dur": 30,
     "args": {"Input Dims": [[64]], "Input type": ["float"]}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 3610, "dur": 5,
     "args": {"correlation": 9}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "pid": 0, "tid": 7, "ts": 3700,
     "dur": 50, "args": {"correlation": 10, "Collective name": "allreduce", "In msg nelems": 16, "dtype": "Float"}},
    {"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#Adam.step", "pid": 1, "tid": 1, "ts": 4000, "dur": 50},
    {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 1295,
     "args": {"Bytes": 8192, "Addr": 11, "Total Allocated": 8192, "Device Type": 0}},
    {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 3020,
     "args": {"Bytes": -8192, "Addr": 11, "Total Allocated": 0, "Device Type": 1}}]})json";
  const uint32_t seed = static_cast<uint32_t>(envInt("SHARDSCOPE_FUZZ_SEED", 20261124));
  Mutator bytes(seed);
  TreeMutator tree(seedTrace, seed + 4);
  const std::string dir = testing::freshTempDir("profiler_fuzz");
  const auto [loaded, read] = fuzzRead(
      import::profilerTraceFileName(dir, 0), [&](int i) { return i % 2 ? tree.mutate() : bytes.mutate(seedTrace); },
      [&] { return import::loadProfilerTraces(dir); }, "rank-0.pt.trace.json");
  std::printf("fuzzed %d profiler traces: %d still loaded, %d refused\n", read, loaded, read - loaded);
  EXPECT_GT(loaded, 0) << "some mutants are still valid traces";
  EXPECT_LT(loaded, read) << "the mutations must break traces too";
}

// Flight Recorder dumps of a real gloo job (tests/data/flight_recorder_gloo), a JSON one mutated as
// bytes and as a tree and a pickled one as bytes: each is read and its first mismatch found, or it
// is refused naming the file, never a crash or an exception.
TEST(LoaderFuzz, NoMutatedFlightRecorderDumpCrashesItsReader) {
  const std::string data = std::string(SHARDSCOPE_TEST_DATA) + "/flight_recorder_gloo";
  const std::string json = testing::fileContents(data + "/skip_json/fr-0");
  const std::string pickled = testing::fileContents(data + "/reorder_pickle/fr-1");
  ASSERT_FALSE(json.empty());
  ASSERT_FALSE(pickled.empty());
  const std::string dir = testing::freshTempDir("flight_recorder_fuzz");
  const uint32_t seed = static_cast<uint32_t>(envInt("SHARDSCOPE_FUZZ_SEED", 20261124));
  Mutator bytes(seed + 7);
  TreeMutator tree(json, seed + 8);
  int loaded = 0, read = 0;
  for (int i = 0; i < 150 * envInt("SHARDSCOPE_FUZZ_ITERATIONS", 1); ++i, ++read) {
    const std::string mutant = i % 3 == 0 ? tree.mutate() : bytes.mutate(i % 3 == 1 ? json : pickled);
    std::ofstream(dir + "/fr-3", std::ios::binary | std::ios::trunc) << mutant;
    const auto dumps = import::loadFlightRecorderDumps({dir + "/fr-3"});
    if (!dumps.error.empty()) {
      EXPECT_NE(dumps.error.find("fr-3"), std::string::npos) << "names the file: " << dumps.error;
      continue;
    }
    (void)stats::firstMismatch(dumps.logs);
    (void)stats::hangSummaryJson(dumps.logs).dump();
    ++loaded;
  }
  std::printf("fuzzed %d Flight Recorder dumps: %d still loaded, %d refused\n", read, loaded, read - loaded);
  EXPECT_GT(loaded, 0) << "some mutants (a changed number) are still dumps";
  EXPECT_LT(loaded, read) << "the mutations must break dumps too";
}

// A launched job's rank files (`worker --trace-dir`: binary frames between text lines), one rank's
// bytes mutated as above: the job is read, its damaged items skipped and said, never a crash.
TEST(LoaderFuzz, NoMutatedRankStreamCrashesItsReader) {
  config::RunConfig config = testing::tinyGptConfig();
  config.strategy = config::StrategyKind::FullShard;
  config.steps = 2;
  const std::string dir = testing::freshTempDir("rank_stream_fuzz") + "/job";
  for (const auto& r : testing::runWorkerJob(config, {"--trace-dir", dir})) ASSERT_EQ(r.exitCode, 0) << r.output;
  const std::string stream = testing::fileContents(rankEventFileName(dir, 0));
  ASSERT_FALSE(stream.empty());
  Mutator bytes(static_cast<uint32_t>(envInt("SHARDSCOPE_FUZZ_SEED", 20261124)) + 9);
  int read = 0, said = 0;
  for (int i = 0; i < 150 * envInt("SHARDSCOPE_FUZZ_ITERATIONS", 1); ++i, ++read) {
    std::ofstream(rankEventFileName(dir, 0), std::ios::binary | std::ios::trunc) << bytes.mutate(stream);
    const auto job = loadRankEventFiles(dir);
    if (!job.error.empty()) {
      EXPECT_NE(job.error.find(dir), std::string::npos) << "names the directory: " << job.error;
      continue;
    }
    (void)stats::computeRankStats(job.config, job.recording, 0);
    said += job.note.find("items that are not events skipped in rank 0") != std::string::npos;
  }
  std::printf("fuzzed %d rank streams: %d said some items were not events\n", read, said);
  EXPECT_GT(said, 0) << "the mutations must damage frames too";
}

}  // namespace
}  // namespace shardscope::trace
