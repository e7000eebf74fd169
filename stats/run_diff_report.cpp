#include "stats/run_diff_report.h"

#include <cmath>

#include "trace/format.h"

namespace shardscope::stats {

namespace {

const char* unitName(DiffUnit unit) {
  return unit == DiffUnit::Bytes ? "bytes" : unit == DiffUnit::Percent ? "percent" : "seconds";
}

}  // namespace

std::string diffExposureText(const DiffChange& c) {
  if (c.exposedA < 0 || c.exposedB < 0) return "";
  if (c.exposedA == 0 && c.exposedB == 0) return "hidden by compute";
  DiffChange exposed = c;
  exposed.a = c.exposedA;
  exposed.b = c.exposedB;
  return "exposed " + diffChangeText(exposed);
}

void printRunDiff(std::FILE* out, const RunDiff& d, const DiffSide& a, const DiffSide& b, size_t top) {
  std::fprintf(out, "A: %s\nB: %s\n", a.name.c_str(), b.name.c_str());
  std::fprintf(out, "steps compared: %d to %d of both (the first %d left out as warm-up)\n", d.warmup,
               d.warmup + d.stepsCompared - 1, d.warmup);
  std::fprintf(out, "\nverdict: %s: %s\n", verdictName(d.verdict), d.reason.c_str());
  std::fprintf(out, "\n%-28s %-44s %12s %12s %12s %8s  %s\n", "largest changes", "where", "A", "B", "change", "share",
               "of a collective's time");
  size_t shown = 0;
  for (const auto& c : d.changes) {
    if (shown == top) break;
    if (c.a == c.b) continue;
    ++shown;
    std::fprintf(out, "%-28s %-44s %12s %12s %12s %+7.1f%%  %s\n", c.figure.c_str(),
                 (c.where.empty() ? std::string("the run") : c.where).c_str(), diffValueText(c.unit, c.a).c_str(),
                 diffValueText(c.unit, c.b).c_str(), diffChangeText(c).c_str(), 100 * c.share,
                 diffExposureText(c).c_str());
  }
  if (shown == 0) std::fprintf(out, "(nothing differs)\n");
  std::fprintf(
      out,
      "\nper step where a time or bytes moved; memory at its peak. share: the change over A's step time "
      "(times), A's peak on that rank (memory), or the bytes that rank's collectives moved per step in A (bytes "
      "moved). exposed: the part of a collective's time no compute beside it hid\n");
  for (const auto& note : d.notes) std::fprintf(out, "note: %s\n", note.c_str());
}

nlohmann::json runDiffJson(const RunDiff& d, const DiffSide& a, const DiffSide& b) {
  nlohmann::json changes = nlohmann::json::array();
  for (const auto& c : d.changes) {
    if (c.a == c.b) continue;
    changes.push_back({{"figure", c.figure},
                       {"where", c.where},
                       {"rank", c.rank},
                       {"unit", unitName(c.unit)},
                       {"a", c.a},
                       {"b", c.b},
                       {"change", c.b - c.a},
                       {"share", c.share},
                       {"at", c.at.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.at)},
                       {"exposed_a", c.exposedA < 0 ? nlohmann::json(nullptr) : nlohmann::json(c.exposedA)},
                       {"exposed_b", c.exposedB < 0 ? nlohmann::json(nullptr) : nlohmann::json(c.exposedB)}});
  }
  return {{"schema", "shardscope.diff/1"},
          {"a", a.name},
          {"b", b.name},
          {"warmup", d.warmup},
          {"steps_compared", d.stepsCompared},
          {"step_time_s",
           {{"a", d.stepA}, {"b", d.stepB}, {"spread_a", d.spreadA}, {"spread_b", d.spreadB}, {"noise", d.noise}}},
          {"peak_bytes", {{"a", d.peakA}, {"b", d.peakB}}},
          {"verdict", verdictName(d.verdict)},
          {"reason", d.reason},
          {"changes", changes},
          {"notes", d.notes}};
}

}  // namespace shardscope::stats
