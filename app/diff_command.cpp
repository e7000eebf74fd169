#include "app/diff_command.h"

#include <cstdio>

#include "estimate/parse_quantity.h"
#include "files/output_file.h"
#include "files/readable_path.h"
#include "recordings/open_recording.h"
#include "stats/run_diff_report.h"

namespace shardscope::app {

namespace {

int badInput(const std::string& message) {
  std::fprintf(stderr, "shardscope: error: %s\n", message.c_str());
  return 2;
}

// One side: a recording read through the one door, with its per-rank figures; the recording
// itself stays in `opened`, which outlives the side.
std::optional<std::string> sideOf(const std::string& path, recordings::Recording& opened, stats::DiffSide& side) {
  if (auto why = files::cannotOpenReason(path); !why.empty()) return why;
  opened = recordings::openRecording({path}, {trace::kDefaultDetailEvents});
  if (!opened.error.empty()) return opened.error;
  auto& part = opened.parts.front();
  side.name = path;
  switch (part.kind) {
    case recordings::RecordingKind::FlightRecorder:
      return path +
             " holds Flight Recorder dumps: the last collectives of a hang, no steps to diff. Diff two "
             "traces or summaries of runs (--trace, --summary, a torch.profiler job's folder).";
    case recordings::RecordingKind::Summary:
      if (part.summary.runs.size() != 1) {
        return path + " is a compare's summary of " + std::to_string(part.summary.runs.size()) +
               " runs: diff one run's summary or trace against another's (compare --trace writes one per run).";
      }
      side.config = part.summary.runs[0].config;
      side.ranks = part.summary.runs[0].ranks;
      return std::nullopt;
    default:
      side.config = part.trace.config;
      side.recording = &part.trace.recording;
      side.ranks = stats::computeRankStats(side.config, part.trace.recording, part.trace.parameterCount);
      return std::nullopt;
  }
}

}  // namespace

void addDiffOptions(CLI::App& cmd, DiffChoice& c) {
  cmd.add_option("A B", c.paths,
                 "two recordings that `view` opens: shardscope traces (.pftrace, .json) or summaries, a job's "
                 "--trace-dir, a torch.profiler job's folder; A is the baseline, B the run in question")
      ->expected(2);
  cmd.add_option("--gate", c.gate,
                 "the change in step time or peak memory, as a share of A's, below which it is no change, e.g. "
                 "5% [default: 5%]; a step-time change within two standard errors of the difference of the runs' means "
                 "(from their steps' spread) is never a regression");
  cmd.add_option("--warmup", c.warmup, "steps left out at the start of both runs [default: 1]");
  cmd.add_option("--top", c.top, "how many of the largest changes to list [default: 15]");
  cmd.add_option("--json", c.jsonPath, "also write the diff as JSON to FILE, for tools");
}

int runDiff(const DiffChoice& c) {
  if (c.paths.size() != 2) return badInput("diff takes two recordings, A and B: 'shardscope diff A B'");
  const auto gate = estimate::parsePercent(c.gate);
  if (!gate) return badInput("--gate '" + c.gate + "' is not a share: give 0% to 99%, e.g. --gate 5%");
  if (c.warmup < 0) return badInput("--warmup " + std::to_string(c.warmup) + " is not a number of steps: 0 or more");
  recordings::Recording openedA, openedB;
  stats::DiffSide a, b;
  if (auto e = sideOf(c.paths[0], openedA, a)) return badInput(*e);
  if (auto e = sideOf(c.paths[1], openedB, b)) return badInput(*e);
  const stats::RunDiff d = stats::diffRuns(a, b, {*gate, c.warmup});
  if (d.stepsCompared < 1) {
    return badInput("no step after the warm-up (--warmup " + std::to_string(c.warmup) + ") is in both " + c.paths[0] +
                    " and " + c.paths[1] + ": record more steps, or pass a smaller --warmup");
  }
  stats::printRunDiff(stdout, d, a, b, static_cast<size_t>(std::max(0, c.top)));
  if (!c.jsonPath.empty()) {
    const auto json = stats::runDiffJson(d, a, b);
    if (auto e = files::writeOutputFile(c.jsonPath, [&](std::ostream& out) { out << json.dump(2) << "\n"; })) {
      return badInput(*e);
    }
  }
  return d.verdict == stats::Verdict::Regression ? 1 : 0;
}

}  // namespace shardscope::app
