// Bad configuration fails before any rank starts: one clear message, non-zero exit, no progress.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/support/run_cli.h"

namespace shardscope {
namespace {

using testing::runShardscope;

void expectRejected(const std::vector<std::string>& args, const std::string& expected) {
  auto r = runShardscope(args);
  EXPECT_NE(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find(expected), std::string::npos) << "output was:\n" << r.output;
  EXPECT_EQ(r.output.find("step 1/"), std::string::npos) << "a rank started:\n" << r.output;
  EXPECT_EQ(r.output.find("terminate called"), std::string::npos) << r.output;
  EXPECT_LT(r.seconds, 20.0) << "rejecting a config must not start ranks";
  // One message: the error line, not a wall of text.
  EXPECT_LE(std::count(r.output.begin(), r.output.end(), '\n'), 3) << r.output;
}

TEST(CliErrors, RejectsBadValuesBeforeStartingRanks) {
  expectRejected({"run", "--world", "0"}, "--world is 0");
  expectRejected({"run", "--world", "9"}, "between 1 and 8");
  expectRejected({"run", "--world", "3", "--batch", "16"}, "--batch 16 is not divisible by --world 3");
  expectRejected({"run", "--strategy", "zero3"}, "--strategy 'zero3' is not known");
  expectRejected({"run", "--model", "bert"}, "--model 'bert' is not known");
  expectRejected({"run", "--hidden", "-4"}, "--hidden is -4");
  expectRejected({"run", "--model", "gpt", "--hidden", "30", "--heads", "4"}, "--heads 4 does not divide --hidden 30");
  expectRejected({"run", "--export", "/proc/no-such-dir/x"}, "--export");
  expectRejected({"run", "--summary", "/no-such-dir/summary.json"}, "--summary");
  expectRejected({"run", "--world", "two"}, "--world");
  expectRejected({"run", "--bind-cores", "numa"}, "--bind-cores 'numa' is not known; choose one of: off, rank");
  expectRejected({"run", "--step-gate", "unit"}, "--step-gate 'unit' is not known; choose one of: off, group, step");
  expectRejected({"run", "--step-gate", "group", "--recording", "off"}, "--step-gate group shows each event group");
  expectRejected({"run", "--offload", "nvme"}, "--offload 'nvme' is not known; choose one of: off, cpu");
  expectRejected({"run", "--strategy", "full_shard", "--offload", "cpu"}, "Pass --device cuda on a machine with a GPU");
  expectRejected({"run", "--strategy", "ddp", "--device", "cuda", "--offload", "cpu"}, "--strategy ddp does not shard");
  expectRejected(
      {"compare", "--device", "cuda", "--offload", "cpu"},
      "these shard no parameters: ddp. Compare the sharded ones alone (--strategies full_shard,shard_grad_op)");
  expectRejected({"view", "x.json", "--window-size", "big"}, "--window-size 'big' is not WIDTHxHEIGHT");
  expectRejected({"run", "--window-size", "100x100", "--screenshot", "/tmp/x.png"}, "from 640x480 to 7680x4320");
  expectRejected({"run", "--at", "1ms"}, "set up the window, and run/compare open one only with --screenshot FILE");
  expectRejected({"compare", "--ui-scale", "2"}, "open one only with --screenshot FILE");
  expectRejected({"--ui-scale", "5"}, "--ui-scale '5' is not a scale from 0.75 to 3; e.g. --ui-scale 1.5");
  expectRejected({"view", "x.json", "--ui-scale", "big"}, "--ui-scale 'big' is not a scale");
  expectRejected({"view", "x.json", "--memory-scale", "log"}, "--memory-scale 'log' is not a choice: shared");
  expectRejected({"run", "--window-events", "2M"}, "open one only with --screenshot FILE");
  for (const char* bad : {"lots", "5000", "2G", "-1", "1e6", "99999999999999999999"}) {
    expectRejected({"run", "--window-events", bad, "--screenshot", "/tmp/x.png"},
                   "--window-events '" + std::string(bad) + "' is not a number of events from 10000 to 1000000000");
  }
  // view holds a long run's .pftrace within it too: its value is checked as the others' are.
  expectRejected({"view", "x.json", "--window-events", "lots"},
                 "--window-events 'lots' is not a number of events from 10000 to 1000000000");
  expectRejected({"listen", "--trace-dir", "/tmp/x", "--bind", "127.0.0.1:29700"},
                 "--bind '127.0.0.1:29700' is not an IP address: give the numeric address");
  expectRejected({"listen", "--trace-dir", "/tmp/x", "--bind", "0.0.0.0"}, "--bind 0.0.0.0 lets other hosts in");
  expectRejected({"listen", "--trace-dir", "/proc/nope"}, "cannot write in --trace-dir '/proc/nope'");
  expectRejected({"worker", "--collector", "nohost"}, "--collector 'nohost' is not HOST:PORT");
  expectRejected({"lesson", "nope"}, "no lesson 'nope'");
  expectRejected({"--lesson", "nope"}, "the lessons are accordion");
  expectRejected({"lesson", "accordion", "--caption", "9", "--screenshot", "/tmp/x.png"},
                 "--caption 9 is not a caption of lesson 'accordion': it has 6, from 1");
  expectRejected({"lesson", "accordion", "--caption", "2"}, "opens one only with --screenshot FILE");
  expectRejected({"--lesson", "accordion", "run"}, "--lesson opens the app on a lesson and goes without a command");
  expectRejected({"--predict"}, "--predict goes with a lesson");
  expectRejected({"lesson", "prefetch", "--predict"}, "asks no questions to predict; these do: accordion");
  expectRejected({"lesson", "zero_stages", "--predict", "--answers", "ddp;1 MiB"}, "--answers, answer 1:");
  expectRejected({"lesson", "zero_stages", "--answers", "x;y"}, "--answers goes with --predict");
  expectRejected({"compare", "--strategies", "ddp,full_shard", "--focus", "zero1", "--screenshot", "/tmp/x.png"},
                 "--focus 'zero1' is not a strategy this command runs (ddp, full_shard)");
  expectRejected({"run", "--step-gate", "group", "--screenshot", "/tmp/x.png"}, "a window nobody can press it in");
}

// What the option parser itself rejects gets the same treatment as a bad value: one line naming the
// word, what was meant or allowed, exit status 2 like every other usage error.
TEST(CliErrors, ParserErrorsNameTheWordAndTheFix) {
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> cases = {
      {{"frobnicate"}, {"'frobnicate' is not a command", "run, compare, estimate, view"}},
      {{"rnu"}, {"Did you mean run?"}},
      {{"--world", "2"}, {"options follow a command", "shardscope run --world"}},
      {{"compare", "--wrold", "2"}, {"--wrold is not an option of 'shardscope compare'", "Did you mean --world?"}},
      {{"run", "--stpes=3"}, {"Did you mean --steps?"}},
      {{"run", "--steps", "x"}, {"--steps is 'x'; it takes a whole number, e.g. --steps 5"}},
      {{"run", "--lr", "fast"}, {"--lr is 'fast'; it takes a number"}},
      {{"run", "--lora-rank", "2", "--lora-rank", "4"}, {"--lora-rank is given 2 times; give it once"}},
      {{"run", "--world"}, {"--world needs a value: a whole number, e.g. --world 2"}},
      {{"run", "--world", "2", "3"}, {"'3' was not expected by 'shardscope run'"}},
      {{"view"}, {"'shardscope view' needs FILE"}},
  };
  for (const auto& [args, expected] : cases) {
    auto r = runShardscope(args);
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_EQ(r.output.rfind("shardscope: error: ", 0), 0u) << r.output;
    for (const auto& text : expected) EXPECT_NE(r.output.find(text), std::string::npos) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  }
  // A word that is close to nothing suggests nothing.
  auto far = runShardscope({"run", "--zzzzzz", "1"});
  EXPECT_EQ(far.output.find("Did you mean"), std::string::npos) << far.output;
  // Help is not an error.
  EXPECT_EQ(runShardscope({"compare", "--help"}).exitCode, 0);
}

// Two runs given one --summary: the later to finish says that it replaces what the other wrote
// (the last one won without a word). Here the other writer is the test, once the run has started
// (its partial trace is there).
TEST(CliErrors, ASummaryWrittenByAnotherRunMeanwhileIsReplacedWithAWarning) {
  const auto dir = testing::freshTempDir("summary_twice");
  testing::CliResult run;
  std::thread first([&] {
    run = runShardscope({"run", "--model", "mlp", "--world", "1", "--steps", "400", "--summary", dir + "/s.json",
                         "--trace", dir + "/t.json"});
  });
  bool started = false;
  for (int i = 0; i < 600 && !started; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (const auto& e : std::filesystem::directory_iterator(dir))
      started |= e.path().filename().string().rfind(".t.json.", 0) == 0;
  }
  EXPECT_TRUE(started) << "the run never started its trace";
  std::ofstream(dir + "/s.json") << R"({"schema": "another run's"})";
  first.join();
  EXPECT_EQ(run.exitCode, 0) << run.output;
  EXPECT_NE(run.output.find("warning: '" + dir + "/s.json' was written by someone else while this run went"),
            std::string::npos)
      << run.output;
  EXPECT_EQ(run.output.find("t.json' was written"), std::string::npos)
      << "its own trace is no one else's: " << run.output;
  EXPECT_NE(testing::fileContents(dir + "/s.json").find("shardscope.summary"), std::string::npos);
  // Alone, a run replaces its own old summary without a word.
  const auto again =
      runShardscope({"run", "--model", "mlp", "--world", "1", "--steps", "1", "--summary", dir + "/s.json"});
  EXPECT_EQ(again.output.find("warning"), std::string::npos) << again.output;
}

// Output that could not be written is a failure, said on stderr: a full standard output (here
// /dev/full) exited 0 with nothing printed.
TEST(CliErrors, AFullStandardOutputFailsTheCommand) {
  for (const std::string command : {"estimate --params 7B", "estimate --model gpt --world 2"}) {
    const auto r =
        testing::runCommand({"sh", "-c", "exec " + std::string(SHARDSCOPE_BINARY) + " " + command + " > /dev/full"});
    EXPECT_EQ(r.exitCode, 1) << command << ": " << r.output;
    EXPECT_NE(r.output.find("could not write to standard output (No space left on device)"), std::string::npos)
        << r.output;
  }
  // The same command to a writable place is fine.
  EXPECT_EQ(runShardscope({"estimate", "--params", "7B"}).exitCode, 0);
}

// Numbers are read as what they are, or refused: no wrapping, no truncation, no saturation, no
// empty value read as 0, no boolean read as 1, no infinity; a huge value is not echoed back whole.
TEST(CliErrors, NumbersOutOfRangeEmptyOrOfTheWrongKindAreRefused) {
  expectRejected({"run", "--steps", "1000000000000"},
                 "--steps is 1000000000000, out of range: the largest it takes is 2147483647");
  expectRejected({"run", "--seed", "99999999999999999999"}, "--seed is 99999999999999999999, out of range");
  expectRejected({"run", "--hidden", ""}, "--hidden is empty; it takes a whole number, e.g. --hidden 64");
  expectRejected({"run", "--trace", ""}, "--trace is empty; give it a value, or leave it out");
  expectRejected({"run", "--lr", "1e400"}, "--lr is '1e400'; it takes a finite number");
  expectRejected({"run", "--lr", "nan"}, "--lr is 'nan'; it takes a finite number");
  // A number out of its range is named as typed (not "-1.000000").
  expectRejected({"run", "--lr", "-1"}, "--lr is -1; it must be a positive finite number");
  expectRejected({"run", "--bucket-cap-mb", "0"}, "--bucket-cap-mb is 0; it must be a positive number");
  expectRejected({"estimate", "--params", ""}, "--params is empty");
  expectRejected({"estimate", "--params", "1e-9"}, "from 1 to 1000T");
  expectRejected({"estimate", "--params", "99999999999999T"}, "from 1 to 1000T");
  // Decimal only: CLI11 read 0x2 as 2, and strtod 0x1p-3 as 0.125.
  expectRejected({"run", "--world", "0x2"}, "--world is '0x2'; numbers are read in decimal only");
  expectRejected({"run", "--seed", "0b101"}, "--seed is '0b101'");
  expectRejected({"run", "--lr", "0x1p-3"}, "--lr is '0x1p-3'; numbers are read in decimal only");
  expectRejected({"run", "--lr", "1e"}, "--lr is '1e'");
  expectRejected({"run", "--steps", "0x10"}, "--steps is '0x10'; numbers are read in decimal only");
  // The parameter count of a model too wide for 64 bits is refused, naming the option (it printed
  // P = -9223371948807946273).
  expectRejected({"estimate", "--hidden", "2147483647"}, "--hidden 2147483647");
  expectRejected({"run", "--model", "gpt", "--vocab", "2147483647", "--hidden", "2147483647", "--heads", "1"},
                 "more parameters than a 64-bit count holds");

  const auto dir = testing::freshTempDir("config_numbers");
  const std::vector<std::pair<std::string, std::string>> files = {
      {R"({"steps": 1e12})", "config key 'steps' has value 1000000000000.0, out of range"},
      {R"({"batch": 3000000000})", "config key 'batch' has value 3000000000, out of range"},
      {R"({"world": 2.7})", "config key 'world' has value 2.7; it must be a whole number"},
      {R"({"world": true})", "config key 'world' has value true; it must be a whole number"},
      {R"({"lr": "fast"})", "config key 'lr' has value \"fast\"; it must be a finite number"},
      {R"({"lr": -1e400})", "is not valid JSON"},
      // The last of two values won without a word.
      {R"({"world": 2, "world": 3})", "is not valid JSON (the key \"world\" appears twice in one object"},
      {R"({"model": ")" + std::string(100000, 'x') + R"("})", "--model '" + std::string(57, 'x') + "...' is not known"},
  };
  for (const auto& [body, expected] : files) {
    std::ofstream(dir + "/c.json") << body;
    expectRejected({"run", "--config", dir + "/c.json"}, expected);
    EXPECT_LT(runShardscope({"run", "--config", dir + "/c.json"}).output.size(), 400u)
        << "the value is not echoed whole";
  }
  // Nesting that overflowed the stack (exit 139) is one message now, for the config and for view.
  std::ofstream(dir + "/c.json") << "{\"model\": " << std::string(100000, '[') << std::string(100000, ']') << "}";
  expectRejected({"run", "--config", dir + "/c.json"}, "is not valid JSON (it is nested deeper than 64 levels)");
  expectRejected({"view", dir + "/c.json"}, "is not a shardscope summary: it is nested deeper than 64 levels");
  std::ofstream(dir + "/t.json") << "{\"traceEvents\": " << std::string(100000, '[') << std::string(100000, ']') << "}";
  expectRejected({"view", dir + "/t.json"}, "nested deeper than 64 levels");
  std::ofstream(dir + "/t.json") << R"({"traceEvents": [1, 2]})";
  expectRejected({"view", dir + "/t.json"}, "its event 1 is a number, not an object");
  // A schema that is not a string was a raw type error; a pid far past any rank, std::bad_alloc.
  std::ofstream(dir + "/s.json") << R"({"schema": 5})";
  expectRejected({"view", dir + "/s.json"}, "its \"schema\" is 5, not \"shardscope.summary/4\"");
  // A field of the wrong kind is named by its path, not by the JSON library's text.
  std::ofstream(dir + "/s.json") << R"({"schema": "shardscope.summary/4", "ranks": [{"rank": 0, "step_time_s": "x"}]})";
  expectRejected({"view", dir + "/s.json"},
                 "is a malformed summary: ranks[0].step_time_s is a string where an array belongs");
  std::ofstream(dir + "/t.json")
      << R"({"traceEvents": [{"ph": "C", "name": "memory", "pid": 2000000000, "ts": 1, "args": {"param_shard": 5}}]})";
  expectRejected({"view", dir + "/t.json"},
                 "has an event whose pid is 2000000000; in a shardscope trace the pid is the rank");
  std::ofstream(dir + "/t.json")
      << R"({"traceEvents": [{"ph": "C", "name": "memory", "pid": -3, "ts": 1, "args": {}}]})";
  expectRejected({"view", dir + "/t.json"}, "whose pid is -3");
  // A field of the wrong kind is named with its event, not by the JSON library's own text.
  std::ofstream(dir + "/t.json") << R"({"traceEvents": [{"ph": "M", "pid": 0},
      {"ph": "X", "cat": "compute", "pid": 0, "tid": 1, "name": "step 0", "ts": {}, "dur": 1, "args": {}}]})";
  expectRejected({"view", dir + "/t.json"},
                 "has a malformed event: in its event 2, \"ts\" is an object where a number belongs");
  std::ofstream(dir + "/t.json") << R"({"traceEvents": [{"ph": "X", "cat": "comm", "pid": 0, "tid": 2,
      "name": "all_reduce", "ts": 1, "dur": 1, "args": {"op": "all_reduce", "bytes": [1]}}]})";
  expectRejected({"view", dir + "/t.json"}, "in its event 1, \"args.bytes\" is an array where a number belongs");
  std::ofstream(dir + "/t.json")
      << R"({"traceEvents": [{"ph": "C", "name": "memory", "pid": 0, "ts": 1, "args": {"param_shard": "5"}}]})";
  expectRejected({"view", dir + "/t.json"}, "\"args.param_shard\" is a string where a number belongs");
  std::ofstream(dir + "/rank-0.pt.trace.json")
      << R"({"schemaVersion": 1, "traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1},
      {"ph": "i", "name": "[memory]", "ts": 2, "args": {"Bytes": 1, "Device Type": {}}}]})";
  expectRejected({"view", dir + "/rank-0.pt.trace.json", "--summary", dir + "/out.json"},
                 "in its event 2 (a [memory] event), \"args.Device Type\" is an object where a number belongs");
  EXPECT_EQ(runShardscope({"view", dir + "/t.json"}).output.find("json.exception"), std::string::npos);
  // 2.0 is a whole number.
  std::ofstream(dir + "/c.json") << R"({"world": 2.0, "steps": 1, "model": "mlp", "layers": 1, "hidden": 8})";
  EXPECT_EQ(runShardscope({"run", "--config", dir + "/c.json"}).exitCode, 0);
}

// A run this host cannot hold is refused before any rank starts (it grew past 8 GB and was
// OOM-killed); --memory-check off is the way round the estimate, and is itself checked.
TEST(CliErrors, ARunThatCannotFitInMemoryIsRefusedBeforeItStarts) {
  // 105 billion parameters: 1.7 TB of model states per rank, more than any host has free.
  expectRejected({"run", "--layers", "100000", "--hidden", "1024"}, "this run needs at least");
  expectRejected({"run", "--layers", "100000", "--hidden", "1024"}, "pass --memory-check off");
  expectRejected({"compare", "--layers", "100000", "--hidden", "1024", "--strategies", "full_shard"},
                 "full_shard at world 2: this run needs");
  expectRejected({"run", "--memory-check", "maybe"}, "--memory-check 'maybe' is not known; choose one of: on, off");
}

// Files with no end (/dev/zero) or that inflate to gigabytes are refused at a stated size, not read
// until memory runs out (view names a device as one, below); a directory is named as one.
TEST(CliErrors, OversizedInputsAreRefusedAtTheirLimit) {
  expectRejected({"run", "--config", "/dev/zero"}, "'/dev/zero' holds more than 1 MiB, the most shardscope reads");
  expectRejected({"view", "/dev/zero"}, "'/dev/zero' is a character device, not a saved record");
  expectRejected({"--lesson", "/dev/zero"}, "lesson file: '/dev/zero' holds more than 1 MiB");
  const auto dir = testing::freshTempDir("oversized");
  expectRejected({"view", dir},
                 "is a directory without rank-R.events files: name a trace or summary file in it, "
                 "or record a job into it with 'shardscope worker --trace-dir");
  const std::string bomb = dir + "/bomb.json.gz";
  ASSERT_EQ(testing::runCommand({"sh", "-c", "head -c 300000000 /dev/zero | gzip -1 > " + bomb}).exitCode, 0);
  expectRejected({"view", bomb}, "holds more than 256 MiB once decompressed");
}

// view takes several files as one PyTorch job's per-rank traces, or as recordings side by side;
// what it cannot open is named.
TEST(CliErrors, ViewNamesWhatItCannotOpen) {
  const auto dir = testing::freshTempDir("view_paths");
  expectRejected({"view", dir + "/nothing.json"}, "'" + dir + "/nothing.json' does not exist: name a trace");
  std::ofstream(dir + "/s.json") << R"({"schema": "shardscope.summary/4"})";
  std::ofstream(dir + "/a.pt.trace.json") << R"({"schemaVersion": 1, "traceEvents": []})";
  expectRejected({"view", dir + "/a.pt.trace.json", dir + "/s.json"},
                 "'" + dir +
                     "/a.pt.trace.json' is one rank's torch.profiler trace: beside other recordings, name a "
                     "PyTorch job by its folder");
  // One process's trace (no distributedInfo, no rank in its name) is rank 0 of a world of 1, said.
  const auto single = runShardscope({"view", dir + "/a.pt.trace.json", "--summary", dir + "/one.json"});
  EXPECT_EQ(single.exitCode, 0) << single.output;
  EXPECT_NE(single.output.find("a.pt.trace.json names no rank (no distributedInfo, no rank-R in its name): read as one "
                               "process, rank 0 of a world of 1"),
            std::string::npos)
      << single.output;
  expectRejected({"view", dir + "/a.pt.trace.json", dir + "/s.json", "--summary", dir + "/out.json"},
                 "'" + dir + "/s.json' is neither");
  // A file that is not there is said to be missing, not "neither" a job nor a trace.
  expectRejected({"view", dir + "/nope.json", "--summary", dir + "/out.json"},
                 "'" + dir + "/nope.json' does not exist: name a job's --trace-dir");
}

// view says why it cannot read what it is given, in the window's way and in --summary's, rather
// than that it is none of the kinds it opens.
void expectViewRefuses(const std::string& path, const std::string& expected) {
  expectRejected({"view", path}, expected);
  expectRejected({"view", path, "--summary", path + ".summary.json"}, expected);
}

TEST(CliErrors, ViewSaysWhyItCannotReadAFile) {
  const auto dir = testing::freshTempDir("view_unreadable");
  std::string text = R"({"traceEvents": [)";
  for (int i = 0; i < 3000; ++i) text += R"({"ph": "X", "name": "step", "ts": )" + std::to_string(i) + "},";
  std::ofstream(dir + "/t.json") << text << "{}]}";
  ASSERT_EQ(testing::runCommand({"gzip", "-k", dir + "/t.json"}).exitCode, 0);
  const std::string whole = testing::fileContents(dir + "/t.json.gz");
  std::ofstream(dir + "/cut.json.gz", std::ios::binary) << whole.substr(0, 200);
  expectViewRefuses(dir + "/cut.json.gz", "'" + dir + "/cut.json.gz' is a damaged gzip file: it ends at byte 200");
  std::string badCrc = whole;
  badCrc[badCrc.size() - 8] = static_cast<char>(badCrc[badCrc.size() - 8] ^ 0x55);
  std::ofstream(dir + "/crc.json.gz", std::ios::binary) << badCrc;
  expectViewRefuses(dir + "/crc.json.gz", "'" + dir + "/crc.json.gz' is a damaged gzip file: corrupt at byte " +
                                              std::to_string(whole.size() - 4) + " of " + std::to_string(whole.size()));
  std::ofstream(dir + "/noise.json.gz", std::ios::binary)
      << std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10) << std::string(3000, '\xff');
  expectViewRefuses(dir + "/noise.json.gz", "'" + dir + "/noise.json.gz' is a damaged gzip file: corrupt at byte 11");

  // A trace through a pipe (the shell's <(...)) is refused naming it; so is a FIFO with no writer,
  // which would block open() for ever: it is never opened.
  for (const std::string& summary : {std::string(), " --summary " + dir + "/s.json"}) {
    const auto piped = testing::runCommand(
        {"bash", "-c", std::string(SHARDSCOPE_BINARY) + " view <(cat " + dir + "/t.json)" + summary}, {}, 60);
    EXPECT_EQ(piped.exitCode, 2) << piped.output;
    EXPECT_NE(piped.output.find("is a pipe (a FIFO, or a shell's <(...)), which gives its bytes once"),
              std::string::npos)
        << piped.output;
  }
  const std::string fifo = dir + "/fifo.pftrace";
  ASSERT_EQ(testing::runCommand({"mkfifo", fifo}).exitCode, 0);
  for (const bool summary : {false, true}) {
    auto args = summary ? std::vector<std::string>{"view", fifo, "--summary", dir + "/s.json"}
                        : std::vector<std::string>{"view", fifo};
    const auto r = runShardscope(args, {}, 30);
    EXPECT_EQ(r.exitCode, 2) << "a FIFO with no writer must not hang view: " << r.output;
    EXPECT_NE(r.output.find("'" + fifo + "' is a pipe"), std::string::npos) << r.output;
  }

  // A folder whose only rank file is noise is no job (not a job of the default world, 0 steps).
  std::filesystem::create_directory(dir + "/job");
  std::mt19937 random(66);
  std::string noise(3000, '\0');
  for (char& c : noise) c = static_cast<char>(random());
  std::ofstream(dir + "/job/rank-0.events", std::ios::binary) << noise;
  expectViewRefuses(dir + "/job", "'" + dir + "/job/rank-0.events' holds 3000 bytes and not one event");

  // Permission denied, as a user other than the file's owner (root reads anything: run as nobody).
  ASSERT_EQ(testing::runCommand({"chmod", "755", dir}).exitCode, 0);
  ASSERT_EQ(testing::runCommand({"chmod", "000", dir + "/t.json"}).exitCode, 0);
  std::vector<std::string> asUser = {SHARDSCOPE_BINARY, "view", dir + "/t.json", "--summary", dir + "/s.json"};
  if (::geteuid() == 0) {
    if (testing::runCommand({"setpriv", "--version"}).exitCode != 0) GTEST_SKIP() << "root, without setpriv";
    asUser.insert(asUser.begin(), {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"});
  }
  const auto denied = testing::runCommand(asUser);
  EXPECT_EQ(denied.exitCode, 2) << denied.output;
  EXPECT_NE(denied.output.find("'" + dir + "/t.json' cannot be read: permission denied"), std::string::npos)
      << denied.output;
}

TEST(CliErrors, RejectsMalformedConfigFiles) {
  const auto dir = testing::freshTempDir("cli_config");
  std::ofstream(dir + "/bad.json") << "{ this is not json";
  expectRejected({"run", "--config", dir + "/bad.json"}, "not valid JSON");
  std::ofstream(dir + "/world.json") << R"({"world": 99})";
  expectRejected({"run", "--config", dir + "/world.json"}, "--world is 99");
  expectRejected({"run", "--config", dir + "/absent.json"}, "cannot read config file");
}

TEST(CliErrors, CommandLineOverridesTheConfigFile) {
  const auto dir = testing::freshTempDir("cli_override");
  std::ofstream(dir + "/world.json") << R"({"world": 99, "steps": 1, "hidden": 8, "layers": 1})";
  auto r = runShardscope({"run", "--config", dir + "/world.json", "--world", "2"});
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("world 2"), std::string::npos) << r.output;
}

// A value a --config file gave is named with the file and its key wherever it is found wrong: the
// checks after the file is read (a form such as R:FACTOR, a range, a value against another) said
// only "--slow-rank 'x:y' is not R:FACTOR". A value the command line gave over the file's is not
// blamed on the file.
TEST(CliErrors, ConfigFileValueErrorsNameTheFileAndTheKey) {
  const auto dir = testing::freshTempDir("cli_config_values");
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    return dir + "/" + name;
  };
  const auto slow = write("slow.json", R"({"slow-rank": "x:y"})");
  expectRejected({"run", "--config", slow},
                 "config file '" + slow + "', key \"slow-rank\": --slow-rank 'x:y' is not R:FACTOR");
  expectRejected({"estimate", "--config", slow}, "config file '" + slow + "', key \"slow-rank\": --slow-rank 'x:y'");
  const auto hang = write("hang.json", R"({"hang_rank": "1"})");
  expectRejected({"run", "--config", hang}, "config file '" + hang + "', key \"hang_rank\": --hang-rank '1'");
  const auto trace = write("trace.json", R"({"trace": "run.txt"})");
  expectRejected({"run", "--config", trace}, "config file '" + trace + "', key \"trace\": --trace 'run.txt'");
  const auto lr = write("lr.json", R"({"lr": -1})");
  expectRejected({"compare", "--config", lr}, "config file '" + lr + "', key \"lr\": at world 2: --lr is -1");
  // Two keys of the file against each other; then one of them given on the command line instead.
  const auto batch = write("batch.json", R"({"batch": 3, "world": 2})");
  expectRejected({"run", "--config", batch}, "config file '" + batch + "', keys \"batch\", \"world\": --batch 3");
  expectRejected({"run", "--config", batch, "--world", "4"},
                 "config file '" + batch + "', key \"batch\": --batch 3 is not divisible by --world 4");
  const auto fromLine = runShardscope({"run", "--config", slow, "--slow-rank", "y"});
  EXPECT_EQ(fromLine.exitCode, 2) << fromLine.output;
  EXPECT_EQ(fromLine.output.find("config file"), std::string::npos)
      << "--slow-rank y is the command line's: " << fromLine.output;
}

// One key in both spellings ran with whichever the JSON object held last (2.0 here) and exited 0;
// a config file gives a key once.
TEST(CliErrors, AConfigKeyInBothSpellingsIsRefused) {
  const auto dir = testing::freshTempDir("cli_config_twice");
  std::ofstream(dir + "/twice.json") << R"({"bucket-cap-mb": 1, "bucket_cap_mb": 2, "steps": 1})";
  const auto r = runShardscope({"run", "--config", dir + "/twice.json"});
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("config file '" + dir +
                          "/twice.json': config keys 'bucket-cap-mb' and 'bucket_cap_mb' are one key, "
                          "--bucket-cap-mb, given twice"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("step 1/"), std::string::npos) << "a rank started: " << r.output;
}

// An output that could not be written makes the exit status 1, as run's (docs/cli.md): view
// --summary into /dev/full said so but exited 2, and a lesson's trace that could not be written was
// lost without a word, exit 0. Where it can be told before anything is read or run, it is a usage
// error (2), as run's outputs are.
TEST(CliErrors, AnOutputThatCannotBeWrittenExitsOne) {
  const auto dir = testing::freshTempDir("cli_output_exit");
  const auto run =
      runShardscope({"run", "--steps", "1", "--hidden", "8", "--layers", "1", "--trace", dir + "/t.pftrace"});
  ASSERT_EQ(run.exitCode, 0) << run.output;
  const auto full = runShardscope({"view", dir + "/t.pftrace", "--summary", "/dev/full"});
  EXPECT_EQ(full.exitCode, 1) << full.output;
  EXPECT_NE(full.output.find("cannot write '/dev/full': No space left on device"), std::string::npos) << full.output;
  const auto missing = runShardscope({"view", dir + "/t.pftrace", "--summary", dir + "/no/such/dir/s.json"});
  EXPECT_EQ(missing.exitCode, 2) << missing.output;
  EXPECT_NE(missing.output.find("--summary '" + dir + "/no/such/dir/s.json' cannot be written"), std::string::npos)
      << missing.output;

  // A lesson's run whose trace goes to a full device (its file a link to /dev/full).
  std::filesystem::create_directories(dir + "/lesson");
  std::filesystem::create_symlink("/dev/full", dir + "/lesson/full_shard.json");
  const auto lesson = runShardscope({"lesson", "accordion", "--trace-dir", dir + "/lesson"});
  EXPECT_EQ(lesson.exitCode, 1) << lesson.output;
  EXPECT_NE(lesson.output.find("cannot write '" + dir + "/lesson/full_shard.json': No space left on device"),
            std::string::npos)
      << lesson.output;
  // Its --trace-dir one that cannot be made: said before the first run, not as the run failed after it.
  const auto nowhere = runShardscope({"lesson", "accordion", "--trace-dir", "/proc/no/such/dir"});
  EXPECT_EQ(nowhere.exitCode, 2) << nowhere.output;
  EXPECT_NE(nowhere.output.find("--trace-dir '/proc/no/such/dir': --trace '/proc/no/such/dir/full_shard.json' "
                                "cannot be written"),
            std::string::npos)
      << nowhere.output;
  EXPECT_EQ(nowhere.output.find("run 1/1"), std::string::npos) << nowhere.output;
  // One that is merely missing is made, as --record's is.
  const auto made = runShardscope({"lesson", "accordion", "--trace-dir", dir + "/new/folder"});
  EXPECT_EQ(made.exitCode, 0) << made.output;
  EXPECT_TRUE(std::filesystem::exists(dir + "/new/folder/full_shard.json")) << made.output;
}

TEST(CliErrors, RunTablesNameTheAllocatorThatMeasured) {
  auto r = runShardscope({"run", "--world", "2", "--steps", "1", "--hidden", "8", "--layers", "1"});
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("(measured by the CPU allocator hook)"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("CUDA"), std::string::npos) << r.output;
}

// --recording off measures step times only: the tables and the summary say so instead of showing
// zeros as if they were measured. --recording alternate divides its traffic by the steps it
// recorded, so its per-step bytes are those of a fully recorded run.
TEST(RunTables, UnrecordedFiguresAreMarkedNotShownAsZero) {
  const auto dir = testing::freshTempDir("run_tables_recording");
  const std::vector<std::string> common = {"run", "--strategy", "full_shard", "--world",  "2", "--steps",
                                           "4",   "--hidden",   "8",          "--layers", "1"};
  auto run = [&](const std::string& mode) {
    auto args = common;
    for (const auto& a : {std::string("--recording"), mode, std::string("--summary"), dir + "/" + mode + ".json"}) {
      args.push_back(a);
    }
    auto r = runShardscope(args);
    EXPECT_EQ(r.exitCode, 0) << r.output;
    return std::pair{r.output, nlohmann::json::parse(std::ifstream(dir + "/" + mode + ".json"))};
  };
  const auto [offOutput, off] = run("off");
  EXPECT_NE(offOutput.find("not recorded (--recording off)"), std::string::npos) << offOutput;
  EXPECT_EQ(offOutput.find("Peak memory per rank"), std::string::npos) << offOutput;
  EXPECT_EQ(offOutput.find(" 0 B"), std::string::npos) << offOutput;
  for (const auto& rank : off["ranks"]) {
    EXPECT_EQ(rank["recorded_steps"], 0);
    EXPECT_TRUE(rank["peak_bytes"].is_null());
    EXPECT_TRUE(rank["collectives"].is_null());
    EXPECT_TRUE(rank["overlap_pct"].is_null());
    EXPECT_TRUE(rank["recompute_s_per_step"].is_null());
    EXPECT_EQ(rank["step_time_s"].size(), 4u) << "step times are measured either way";
  }

  const auto [onOutput, on] = run("on");
  const auto [altOutput, alternate] = run("alternate");
  EXPECT_NE(altOutput.find("even steps only"), std::string::npos) << altOutput;
  EXPECT_EQ(on["ranks"][0]["recorded_steps"], 4);
  EXPECT_EQ(alternate["ranks"][0]["recorded_steps"], 2);
  for (const char* op : {"all_gather", "reduce_scatter"}) {
    const auto onBytes = on["ranks"][0]["collectives"][op]["bytes"].get<int64_t>();
    const auto altBytes = alternate["ranks"][0]["collectives"][op]["bytes"].get<int64_t>();
    EXPECT_GT(onBytes, 0) << op;
    EXPECT_EQ(onBytes / 4, altBytes / 2) << op << ": per recorded step";
  }
}

// compare shows what activation checkpointing costs in compute, and only where a column has it.
TEST(RunTables, CompareShowsRecomputeTimeOnlyWithCheckpointing) {
  const std::vector<std::string> common = {
      "compare", "--strategies", "ddp,full_shard", "--world", "2", "--steps", "2", "--hidden", "8", "--layers", "2"};
  auto plain = runShardscope(common);
  ASSERT_EQ(plain.exitCode, 0) << plain.output;
  EXPECT_EQ(plain.output.find("recompute per step"), std::string::npos) << plain.output;
  auto withCheckpointing = common;
  withCheckpointing.insert(withCheckpointing.end(), {"--activation-checkpointing", "blocks"});
  auto checkpointed = runShardscope(withCheckpointing);
  ASSERT_EQ(checkpointed.exitCode, 0) << checkpointed.output;
  const auto at = checkpointed.output.find("recompute per step");
  ASSERT_NE(at, std::string::npos) << checkpointed.output;
  const std::string line = checkpointed.output.substr(at, checkpointed.output.find('\n', at) - at);
  EXPECT_EQ(line.find(" 0 ns"), std::string::npos) << line << ": both columns recomputed something";
}

TEST(CliErrors, HelpExplainsEveryOptionWithItsDefault) {
  auto r = runShardscope({"run", "--help"});
  EXPECT_EQ(r.exitCode, 0);
  for (const char* option : {"--model",     "--layers",  "--hidden",  "--heads",     "--seq",        "--vocab",
                             "--features",  "--classes", "--batch",   "--steps",     "--world",      "--strategy",
                             "--optimizer", "--lr",      "--seed",    "--device",    "--bind-cores", "--bucket-cap-mb",
                             "--config",    "--export",  "--summary", "--step-gate", "--at",         "--window-size"}) {
    EXPECT_NE(r.output.find(option), std::string::npos) << option;
  }
  EXPECT_NE(r.output.find("[default: 25]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("ZeRO-3"), std::string::npos);
}

TEST(CliErrors, EstimateRejectsWhatItCannotRead) {
  expectRejected({"estimate", "--params", "seventy"}, "--params 'seventy' is not a parameter count");
  expectRejected({"estimate", "--params", "70B", "--worlds", "8,,16"}, "--worlds '8,,16'");
  expectRejected({"estimate", "--params", "70B", "--bytes-per-param", "2,2"}, "--bytes-per-param '2,2'");
  expectRejected({"estimate", "--params", "70B", "--gpu-memory", "-80"}, "--gpu-memory -80 is negative");
  expectRejected({"estimate", "--world", "0"}, "--world is 0");
  expectRejected({"estimate", "--params", "70B", "--reserve", "120%"}, "--reserve '120%' is not a percentage");
  expectRejected({"estimate", "--params", "70B", "--fewest-gpus", "--gpu-memory", "0"},
                 "--fewest-gpus needs one GPU's memory");
  expectRejected({"estimate", "--largest-model", "--params", "7B"}, "--largest-model finds the parameter count");
  expectRejected({"estimate", "--arch", "llama"}, "--arch 'llama' is not an architecture: name a preset (llama2-7b");
  expectRejected({"estimate", "--arch", "32,4096,32,2048"}, "gives the shape, not the parameter count: add --params");
  expectRejected({"estimate", "--arch", "llama2-7b", "--recompute", "blocks"},
                 "--recompute 'blocks' is not a recomputation");
  expectRejected({"estimate", "--arch", "llama2-7b", "--micro-batch", "0"},
                 "--micro-batch 0 is not a number of samples");
  expectRejected({"estimate", "--arch", "llama2-7b", "--activation-precision", "fp8"},
                 "--activation-precision 'fp8' is not a precision: choose bf16 or fp16");
  expectRejected({"estimate", "--params", "70B", "--tp", "0"}, "--tp 0 is not a tensor-parallel degree");
  expectRejected({"estimate", "--params", "70B", "--sequence-parallel"}, "--sequence-parallel splits what");
  // Without --params, --tp is the run's (its own prediction counts it): it must fit the run's world.
  expectRejected({"estimate", "--tp", "8"}, "--tp 8 does not divide --world 2");
  expectRejected({"estimate", "--sequence-parallel"}, "--sequence-parallel splits what");
  // --sequence-parallel splits a gpt's sequence among a tensor group: it needs one, and equal parts.
  expectRejected({"run", "--sequence-parallel"}, "it needs --tp 2 or more");
  expectRejected({"run", "--tp", "2", "--sequence-parallel"}, "--sequence-parallel with --model mlp");
  expectRejected({"run", "--model", "gpt", "--seq", "5", "--tp", "2", "--sequence-parallel"},
                 "--seq 5 is not a multiple of --tp 2");
  expectRejected({"run", "--config", "/dev/null", "--sequence-parallel=maybe"}, "sequence-parallel");
  expectRejected({"run", "--model", "gpt", "--heads", "3", "--hidden", "48", "--tp", "2"},
                 "--tp 2 does not divide --heads 3");
  expectRejected({"run", "--tp", "2", "--world", "4", "--strategy", "hybrid_shard", "--shard-group-size", "4"},
                 "--shard-group-size 4 does not divide the 2 data ranks (--world 4 / --tp 2)");
  expectRejected({"estimate", "--params", "70B", "--tp", "8", "--worlds", "1,4"},
                 "--worlds 1,4 has no multiple of --tp 8");
#ifdef SHARDSCOPE_HAS_WINDOW
  expectRejected({"run", "--tab", "charts", "--screenshot", "/tmp/x.png"}, "--tab 'charts' is not a tab");
#else  // the tab names belong to the window; a build without it says that first
  expectRejected({"run", "--tab", "charts", "--screenshot", "/tmp/x.png"}, "built without the window");
#endif
  expectRejected({"compare", "--tab", "estimate"}, "--tab, --at, --zoom, --window-size, --focus");
  expectRejected({"compare", "--strategies", "ddp,zero3"}, "'zero3' is not a strategy");
  expectRejected({"compare", "--strategies", "ddp,"}, "has an empty entry");
  expectRejected({"run", "--gpu-memory", "-3"}, "--gpu-memory is -3; give one device's memory in GB");
  expectRejected({"compare", "--worlds", "1,9"}, "'9' is not a world size on this host");
  expectRejected({"compare", "--worlds", "2,"}, "--worlds '2,' has an empty entry");
  expectRejected({"compare", "--worlds", "1,,2"}, "--worlds '1,,2' has an empty entry");
  expectRejected({"compare", "--worlds", "1,3", "--batch", "8"}, "at world 3: --batch 8 is not divisible by --world 3");
}

// compare --strategies runs exactly the strategies named, in that order: ZeRO stages 0 to 3 side by side.
TEST(CliErrors, CompareRunsTheStrategiesNamed) {
  auto r = runShardscope({"compare", "--strategies", "zero1,ddp", "--model", "mlp", "--layers", "1", "--hidden", "8",
                          "--steps", "1", "--world", "2"});
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const auto zero1 = r.output.find("shardscope run: mlp, 1 layers, hidden 8, zero1");
  const auto ddp = r.output.find("shardscope run: mlp, 1 layers, hidden 8, ddp");
  ASSERT_NE(zero1, std::string::npos) << r.output;
  ASSERT_NE(ddp, std::string::npos) << r.output;
  EXPECT_LT(zero1, ddp) << "in the order given";
  EXPECT_EQ(r.output.find("full_shard"), std::string::npos) << "only the strategies named run";
}

// compare --worlds runs each strategy at each world size on one global batch: a sharded rank's
// model states shrink as 1/N, DDP's do not, and the table puts them beside the estimator's.
TEST(CliErrors, CompareAcrossWorldSizes) {
  const auto dir = testing::freshTempDir("worlds");
  auto r = runShardscope({"compare", "--worlds", "1,2", "--strategies", "ddp,full_shard", "--model", "gpt", "--layers",
                          "2", "--hidden", "32", "--seq", "8", "--batch", "4", "--steps", "1", "--summary",
                          dir + "/compare.json"});
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("Per-rank memory against the world size N"), std::string::npos) << r.output;
  const auto summary = nlohmann::json::parse(std::ifstream(dir + "/compare.json"));
  const auto peak = [&](const char* run, const char* role) {
    return summary["runs"][run]["ranks"][0]["peak_bytes"][role].get<int64_t>();
  };
  const auto kept = [&](const char* run, const char* role) {  // between steps (no Adam temporaries)
    return summary["runs"][run]["ranks"][0]["after_step_bytes"][role].get<int64_t>();
  };
  for (const char* run : {"ddp@1", "ddp@2", "full_shard@1", "full_shard@2"}) {
    ASSERT_TRUE(summary["runs"].contains(run)) << run;
  }
  EXPECT_EQ(summary["runs"]["full_shard@2"]["world_size"], 2);
  EXPECT_EQ(peak("ddp@1", "param_shard"), peak("ddp@2", "param_shard")) << "DDP replicates";
  EXPECT_EQ(peak("full_shard@1", "param_shard"), 2 * peak("full_shard@2", "param_shard")) << "1/N (P' even at 2)";
  EXPECT_EQ(kept("full_shard@1", "optimizer_state"), 2 * kept("full_shard@2", "optimizer_state"));
  // The ring sends nothing at N = 1: the ratio to ddp is left out there, given at N = 2.
  EXPECT_EQ(summary["runs"]["ddp@1"]["ranks"][0]["traffic_per_step"]["sent_bytes"].get<double>(), 0.0);
  EXPECT_NE(r.output.find("ratio to ddp"), std::string::npos) << r.output;
}

// --gpu-memory gives each rank's headroom: the capacity less its peak on the device, marked when
// the run would not fit.
TEST(CliErrors, GpuMemoryGivesTheHeadroomPerRank) {
  const auto dir = testing::freshTempDir("headroom");
  for (const auto& [capacity, over] : {std::pair{"1", false}, std::pair{"0.0001", true}}) {
    auto r = runShardscope({"run", "--model", "gpt", "--layers", "2", "--hidden", "32", "--seq", "8", "--batch", "4",
                            "--steps", "1", "--gpu-memory", capacity, "--summary", dir + "/s.json"});
    ASSERT_EQ(r.exitCode, 0) << r.output;
    EXPECT_NE(r.output.find(std::string("headroom: --gpu-memory ") + (over ? "0.0001" : "1") + " GB"),
              std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("(over)") != std::string::npos, over) << r.output;
    const auto summary = nlohmann::json::parse(std::ifstream(dir + "/s.json"));
    EXPECT_DOUBLE_EQ(summary["config"]["gpu-memory"].get<double>(), std::stod(capacity));
  }
}

// --peak-tflops states the device's peak; MFU is the model FLOP/s over it, per rank, in the summary
// and the table, and null (not 0) without a stated peak.
TEST(CliErrors, PeakTflopsGivesMfu) {
  const auto dir = testing::freshTempDir("mfu");
  for (const char* peak : {"0", "0.25"}) {
    auto r = runShardscope({"run", "--model", "gpt", "--layers", "2", "--hidden", "32", "--seq", "8", "--batch", "4",
                            "--steps", "2", "--peak-tflops", peak, "--summary", dir + "/s.json"});
    ASSERT_EQ(r.exitCode, 0) << r.output;
    const auto summary = nlohmann::json::parse(std::ifstream(dir + "/s.json"));
    // A CPU rank measures no peak and has no device memory to report.
    EXPECT_EQ(summary["device_memory_bytes"], 0);
    EXPECT_EQ(summary["measured_peak_flops"], 0);
    if (std::string(peak) == "0")
      EXPECT_TRUE(summary["mfu_peak"].is_null());
    else
      EXPECT_EQ(summary["mfu_peak"], "the stated peak, --peak-tflops 0.25");
    for (const auto& rank : summary["ranks"]) {
      const auto& throughput = rank["throughput"];
      if (std::string(peak) == "0") {
        EXPECT_TRUE(throughput["mfu"].is_null());
        EXPECT_EQ(r.output.find("MFU"), std::string::npos) << r.output;
        continue;
      }
      EXPECT_NEAR(throughput["mfu"].get<double>(), throughput["model_flops_per_s"].get<double>() / 0.25e12, 1e-12);
      EXPECT_GT(throughput["mfu"].get<double>(), 0.0);
      EXPECT_NE(r.output.find("MFU: model FLOP/s over the stated peak, --peak-tflops 0.25"), std::string::npos)
          << r.output;
    }
  }
  expectRejected({"run", "--peak-tflops", "-1"}, "--peak-tflops is -1; give one device's peak in TFLOP/s");
}

// `--world N` with a model-state question is the N asked about, not silently the default
// --worlds 1,8,16; where it contradicts --worlds or --fewest-gpus it is refused by name.
TEST(CliErrors, EstimateOfAModelTakesWorldAsTheGpuCount) {
  auto three = runShardscope({"estimate", "--params", "7B", "--world", "3", "--bytes-per-param", "2,2,4"});
  EXPECT_EQ(three.exitCode, 0) << three.output;
  // The seeds' 7B on 3 GPUs: full_shard holds (2+2+4) x 7B / 3 = 18.7 GB; no row for 8 or 16 GPUs.
  EXPECT_NE(three.output.find("full_shard             3"), std::string::npos) << three.output;
  EXPECT_NE(three.output.find("18.7 GB  fits in 80 GB"), std::string::npos) << three.output;
  EXPECT_EQ(three.output.find("full_shard             8"), std::string::npos) << three.output;
  expectRejected({"estimate", "--params", "7B", "--world", "3", "--worlds", "1,8"},
                 "--world 3 and --worlds 1,8 both give GPU counts");
  expectRejected({"estimate", "--params", "7B", "--world", "3", "--fewest-gpus"},
                 "--fewest-gpus finds the GPU count itself; drop --world 3");
}

// What the estimate command prints is a prediction and says so, in the table and in the JSON.
TEST(CliErrors, EstimateIsLabelledAPrediction) {
  auto table = runShardscope({"estimate", "--model", "gpt", "--world", "2"});
  EXPECT_EQ(table.exitCode, 0) << table.output;
  EXPECT_NE(table.output.find("PREDICTION"), std::string::npos) << table.output;
  EXPECT_NE(table.output.find("Not predicted: the activation peak"), std::string::npos) << table.output;
  EXPECT_NE(table.output.find("activation (saved for backward)"), std::string::npos) << table.output;
  EXPECT_NE(table.output.find("1.00x"), std::string::npos) << "ddp against itself at 2 ranks: " << table.output;
  // One rank sends nothing: no ratio to ddp there, not 0.00x for ddp itself.
  auto alone = runShardscope({"estimate", "--model", "gpt", "--world", "1", "--batch", "4"});
  EXPECT_EQ(alone.exitCode, 0) << alone.output;
  EXPECT_NE(alone.output.find("ratio to ddp"), std::string::npos) << alone.output;
  EXPECT_EQ(alone.output.find("0.00x"), std::string::npos) << alone.output;
  auto fit = runShardscope({"estimate", "--params", "70B", "--worlds", "8,16", "--bytes-per-param", "2,2,8"});
  EXPECT_EQ(fit.exitCode, 0) << fit.output;
  EXPECT_NE(fit.output.find("PREDICTION"), std::string::npos) << fit.output;
  EXPECT_NE(fit.output.find("105 GB  does NOT fit in 80 GB"), std::string::npos) << fit.output;
  EXPECT_NE(fit.output.find("52.5 GB  fits in 80 GB"), std::string::npos) << fit.output;
  auto json = runShardscope({"estimate", "--model", "gpt", "--json"});
  EXPECT_EQ(json.exitCode, 0) << json.output;
  EXPECT_NE(json.output.find("\"prediction\": true"), std::string::npos) << json.output;
  // The run options it predicts for include accumulation and LoRA (the batch is not its business).
  auto accumulated =
      runShardscope({"estimate", "--model", "gpt", "--world", "2", "--accumulate", "4", "--lora-rank", "2"});
  EXPECT_EQ(accumulated.exitCode, 0) << accumulated.output;
  EXPECT_NE(accumulated.output.find("per micro-batch (x 4)"), std::string::npos) << accumulated.output;
  EXPECT_NE(accumulated.output.find("LoRA rank 2, 4 micro-batches per step"), std::string::npos) << accumulated.output;
  // Under --offload cpu the JSON keeps each role's host figure where it was and the device's passing
  // copies of full_shard and shard_grad_op beside it; ddp has nothing to offload.
  auto offloaded =
      runShardscope({"estimate", "--model", "gpt", "--world", "2", "--device", "cuda", "--offload", "cpu", "--json"});
  ASSERT_EQ(offloaded.exitCode, 0) << offloaded.output;
  const auto predicted = nlohmann::json::parse(offloaded.output.substr(offloaded.output.find('{')))["strategies"];
  EXPECT_EQ(predicted["full_shard"]["memory_per_rank"]["param_shard"]["memory"], "host");
  EXPECT_EQ(predicted["full_shard"]["offload_device_copies"]["param_shard"]["memory"], "device");
  EXPECT_LT(predicted["full_shard"]["offload_device_copies"]["grad_shard"]["bytes"].get<int64_t>(),
            predicted["full_shard"]["memory_per_rank"]["grad_shard"]["bytes"].get<int64_t>());
  EXPECT_TRUE(predicted["ddp"]["offload_device_copies"].empty());
  EXPECT_TRUE(predicted["hybrid_shard"]["offload_device_copies"].empty()) << "not predicted";
  // Nothing runs, so any world size can be predicted (only `run` is capped at one host's ranks).
  auto wide = runShardscope({"estimate", "--model", "gpt", "--world", "64", "--json"});
  ASSERT_EQ(wide.exitCode, 0) << wide.output;
  EXPECT_NE(wide.output.find("\"world\": 64"), std::string::npos) << wide.output;
  // The inverse questions, with a tenth of each GPU kept free.
  auto fewest =
      runShardscope({"estimate", "--params", "70B", "--bytes-per-param", "2,2,8", "--fewest-gpus", "--reserve", "10%"});
  ASSERT_EQ(fewest.exitCode, 0) << fewest.output;
  EXPECT_NE(fewest.output.find("PREDICTION"), std::string::npos) << fewest.output;
  EXPECT_NE(fewest.output.find("72 GB for the model states"), std::string::npos) << fewest.output;
  EXPECT_NE(fewest.output.find("full_shard                   12"), std::string::npos) << fewest.output;
  EXPECT_NE(fewest.output.find("ddp                        none"), std::string::npos) << fewest.output;
  // With a shape, activations per GPU join the model states: Llama-2 70B on 16 GPUs with full
  // recomputation, 52.5 GB of model states + 5.37 GB of activations.
  auto withActivations = runShardscope({"estimate", "--arch", "llama2-70b", "--params", "70B", "--worlds", "16",
                                        "--bytes-per-param", "2,2,8", "--recompute", "full"});
  ASSERT_EQ(withActivations.exitCode, 0) << withActivations.output;
  EXPECT_NE(withActivations.output.find("Korthikanti"), std::string::npos) << withActivations.output;
  EXPECT_NE(withActivations.output.find("APPROXIMATION"), std::string::npos) << withActivations.output;
  EXPECT_NE(withActivations.output.find("5.37 GB      57.9 GB  fits in 80 GB"), std::string::npos)
      << withActivations.output;
  // fp32 activations: 4 bytes per value, so full recomputation keeps twice the bytes (10.7 GB).
  auto fp32 = runShardscope({"estimate", "--arch", "llama2-70b", "--params", "70B", "--worlds", "16",
                             "--bytes-per-param", "2,2,8", "--recompute", "full", "--activation-precision", "fp32"});
  ASSERT_EQ(fp32.exitCode, 0) << fp32.output;
  EXPECT_NE(fp32.output.find("10.7 GB"), std::string::npos) << fp32.output;
  EXPECT_NE(fp32.output.find("4 sbh"), std::string::npos) << fp32.output;
  auto largest = runShardscope({"estimate", "--largest-model", "--worlds", "1,8"});
  ASSERT_EQ(largest.exitCode, 0) << largest.output;
  EXPECT_NE(largest.output.find("PREDICTION"), std::string::npos) << largest.output;
  EXPECT_NE(largest.output.find("full_shard                 5B        40B"), std::string::npos) << largest.output;
  // no_sync's price: full_shard holds every (adapter) gradient unsharded, as ddp does.
  EXPECT_NE(accumulated.output.find("every unsharded gradient, kept from the first micro-batch to the last"),
            std::string::npos)
      << accumulated.output;
}

}  // namespace
}  // namespace shardscope
