// Lessons: a configuration to run, captions that walk through what it shows, and the claims the
// lesson makes, checked on the lesson's own run (never assumed). Files live in assets/lessons/
// (docs/lessons.md lists them):
//   {"title": "...", "teaches": "...",
//    "config": {"model": "gpt", ...},                        run options, as in --config files
//    "runs": [{"label": "ddp", "strategy": "ddp"}, ...],     each: config + these options
//    "captions": [{"text": "...", "tab": "holdings", "at": "all_gather blocks.0@1", "run": "ddp"}],
//    "claims": [{"says": "...", "figure": "peak", "order": ["ddp", "zero1"]},        strictly falling
//               {"says": "...", "less": ["full_shard", "peak"], "than": ["ddp", "peak"], "times": 0.8}]}
// A caption's tab and time are optional; "at" is the playhead's --at (a time or an event group).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/run_config.h"
#include "stats/run_stats.h"
#include "trace/collective_log.h"

namespace shardscope::lessons {

struct LessonRun {
  std::string label;  // how captions and claims name it, and the session's title
  config::RunConfig config;
  bool expectsHang = false;  // "expect": "hang": it has a --hang-rank, and failing is what it shows
};

struct Caption {
  std::string text;
  std::string
      tab;  // a tab below the timelines (comparison, memory, holdings, collectives, estimate, export, help), or ""
  std::string at;      // where the playhead goes, as --at takes it, or ""
  std::string run;     // the run whose timeline the playhead follows; "" for the first
  std::string whatIf;  // a worked example for the Estimate tab's what-if (lessonWhatIfs()), or ""
};

// The Estimate tab's worked examples a caption may fill in: seed-7b, seed-70b, seed-lora, zero-figure-1.
const std::vector<std::string>& lessonWhatIfs();

// One figure of one run, the maximum over its ranks (lessonFigures() names them).
struct FigureRef {
  std::string run;
  std::string figure;
};

// A hung run's first mismatch (stats/first_mismatch.h): its kind and the odd ranks out.
struct MismatchRef {
  std::string run;
  std::string kind;  // mismatchKindName: "missing_rank", "op_type", ...
  std::vector<int> ranks;
};

struct Claim {
  std::string says;              // the sentence a student reads
  std::vector<FigureRef> order;  // each figure strictly larger than the next, or
  FigureRef less, than;          // less < times x than, or
  double times = 1.0;
  std::optional<MismatchRef> mismatch;  // "first_mismatch": what a hung run's last collectives show
};

// "Predict first" (lessons/prediction.h): a figure to estimate, or runs to order by a figure.
struct Question {
  std::string ask;
  FigureRef value;                 // a figure to estimate, or
  std::string figure;              // the figure to order by,
  std::vector<std::string> order;  // and the runs to order (as the lesson lists them, not the answer)
  bool isOrdering() const { return !order.empty(); }
};

struct Lesson {
  std::string name;  // the file's stem
  std::string title;
  std::string teaches;
  std::vector<LessonRun> runs;
  std::vector<Caption> captions;
  std::vector<Claim> claims;
  std::vector<Question> questions;  // asked before the runs in predict-first mode; may be empty
};

// The folder of the lesson files: $SHARDSCOPE_LESSONS, else the source tree's assets/lessons.
std::string lessonDirectory();
// The lessons there, by name, sorted.
std::vector<std::string> lessonNames();

// Reads a lesson by name (assets/lessons/NAME.json) or path. Every run is validated, every caption
// and claim must name a run the lesson has, every figure must be known; the error names the file,
// the entry and the fix.
std::optional<std::string> loadLesson(const std::string& nameOrPath, Lesson& lesson);

// The trace file a lesson run writes under `lesson --trace-dir`: "accumulate 4" -> "accumulate_4.json".
std::string traceFileName(const std::string& runLabel);
// A run's recording as `lesson NAME --record DIR` writes it and a replay reads it: LABEL.pftrace.
std::string recordingFileName(const std::string& runLabel);
// The recordings of `lesson`'s runs that `dir` lacks (none: it can be replayed from there).
std::vector<std::string> missingRecordings(const Lesson& lesson, const std::string& dir);

// The figures a claim may compare, with what each means.
const std::vector<std::pair<std::string, std::string>>& lessonFigures();

enum class FigureUnit { Bytes, Seconds, PerStep, Count, Share };
// The unit of a known figure (Bytes for an unknown one), and a value of it as the tables print it.
FigureUnit figureUnit(const std::string& figure);
std::string formatFigureValue(const std::string& figure, double value);

// A figure of one run: the maximum over its ranks (bytes, seconds, or calls per step).
std::optional<double> figureValue(const std::string& figure, const std::vector<stats::RankStats>& ranks);

// The figures of the run labelled `label` (statsPerRun is index for index with lesson.runs);
// nullptr when the lesson has no such run or it has no ranks (it failed, or has not ended).
const std::vector<stats::RankStats>* runStats(const Lesson& lesson,
                                              const std::vector<std::vector<stats::RankStats>>& statsPerRun,
                                              const std::string& label);

struct ClaimCheck {
  bool holds = false;
  std::string says;      // the claim
  std::string measured;  // what the run measured, e.g. "ddp 64.8 MiB > zero1 47.1 MiB"
};

// Each claim against the measured figures; statsPerRun is index for index with lesson.runs (a run
// that failed or has not ended has no ranks: its claims do not hold, and say so).
// `logsPerRun`, index for index too, holds each run's last collectives where it hung (null otherwise;
// empty: none known), for "first_mismatch" claims.
std::vector<ClaimCheck> checkClaims(const Lesson& lesson, const std::vector<std::vector<stats::RankStats>>& statsPerRun,
                                    const std::vector<std::shared_ptr<const trace::CollectiveLogs>>& logsPerRun = {});

}  // namespace shardscope::lessons
