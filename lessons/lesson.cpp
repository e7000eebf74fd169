#include "lessons/lesson.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "files/file_text.h"
#include "stats/first_mismatch.h"
#include "trace/format.h"
#include "files/user_json.h"
#include "config/model_layout.h"
#include "config/view_tabs.h"

namespace shardscope::lessons {

namespace {

using Unit = FigureUnit;

struct FigureDef {
  std::string name;
  std::string meaning;
  Unit unit;
  std::function<double(const stats::RankStats&)> of;  // one rank's value; the figure is the ranks' maximum
};

double perRecordedStep(const stats::RankStats& r, double total) {
  return r.recordedSteps > 0 ? total / r.recordedSteps : 0;
}

std::vector<FigureDef> buildFigures() {
  std::vector<FigureDef> figures;
  figures.push_back({"peak", "peak allocated bytes (tensor roles)", Unit::Bytes,
                     [](const stats::RankStats& r) { return static_cast<double>(r.peakTotal); }});
  for (int role = 0; role < trace::kMemoryRoleCount; ++role) {
    const std::string name = trace::memoryRoleName(static_cast<trace::MemoryRole>(role));
    figures.push_back({name + "_peak", "the largest " + name + " bytes at any moment", Unit::Bytes,
                       [role](const stats::RankStats& r) { return static_cast<double>(r.peakByRole[role]); }});
  }
  figures.push_back({"model_state_after_step", "weights, gradients and optimizer state held when the last step ended",
                     Unit::Bytes, [](const stats::RankStats& r) {
                       using trace::MemoryRole;
                       double sum = 0;
                       for (auto role : {MemoryRole::ParamShard, MemoryRole::ParamGathered, MemoryRole::GradShard,
                                         MemoryRole::GradFull, MemoryRole::OptimizerState}) {
                         sum += static_cast<double>(r.afterLastStep[static_cast<int>(role)]);
                       }
                       return sum;
                     }});
  figures.push_back({"activation_saved", "activation bytes forward saved for backward", Unit::Bytes,
                     [](const stats::RankStats& r) { return static_cast<double>(r.activationSavedBytes); }});
  figures.push_back(
      {"sent_per_step", "bytes the rank sends per step (ring schedule)", Unit::Bytes, [](const stats::RankStats& r) {
         return perRecordedStep(r, static_cast<double>(trace::allCollectives(r.collectives).sentBytes));
       }});
  for (int g = 0; g < trace::kProcessGroupCount; ++g) {
    const std::string group = trace::processGroupName(static_cast<trace::ProcessGroup>(g));
    figures.push_back(
        {group + "_sent_per_step", "bytes the rank sends per step in its " + group + " group (ring schedule)",
         Unit::Bytes,
         [g](const stats::RankStats& r) { return perRecordedStep(r, static_cast<double>(r.sentBytesByGroup[g])); }});
  }
  for (auto op : {trace::CollectiveOp::AllGather, trace::CollectiveOp::ReduceScatter, trace::CollectiveOp::AllReduce}) {
    const std::string name = trace::collectiveOpName(op);
    figures.push_back({name + "_per_step", name + " calls per step", Unit::PerStep, [op](const stats::RankStats& r) {
                         return perRecordedStep(r, static_cast<double>(r.collectives[static_cast<int>(op)].count));
                       }});
  }
  figures.push_back({"step_time", "steady step time (after the first step)", Unit::Seconds,
                     [](const stats::RankStats& r) { return r.steadyStepSeconds; }});
  figures.push_back({"recompute_time", "time spent recomputing forward per step (activation checkpointing)",
                     Unit::Seconds, [](const stats::RankStats& r) { return r.recomputeSecondsPerStep; }});
  // Under --pp (stats/pipeline_stats.h, pipeline_actions.h).
  figures.push_back({"microbatches_held", "the most micro-batches whose activations the rank held at once", Unit::Count,
                     [](const stats::RankStats& r) { return double(r.peakMicroBatchesInFlight); }});
  figures.push_back({"bubble_share", "the share of its steps with no forward or backward running, measured",
                     Unit::Share, [](const stats::RankStats& r) { return r.bubbleShare; }});
  figures.push_back({"planned_bubble_share",
                     "its idle share of the schedule laid out with the run's own mean F, B, I and W times", Unit::Share,
                     [](const stats::RankStats& r) { return r.plannedBubbleShare; }});
  figures.push_back({"wait_caused_per_step",
                     "per step, the time the other ranks waited for this one where it arrived last at a collective",
                     Unit::Seconds, [](const stats::RankStats& r) { return perRecordedStep(r, r.waitCausedSeconds); }});
  return figures;
}

const std::vector<FigureDef>& figures() {
  static const std::vector<FigureDef> all = buildFigures();
  return all;
}

const FigureDef* findFigure(const std::string& name) {
  for (const auto& f : figures()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string formatFigure(const FigureDef& f, double value) {
  if (f.unit == Unit::Bytes) return trace::formatBytes(value);
  if (f.unit == Unit::Seconds) return trace::formatDuration(value * 1e9);
  char text[32];
  if (f.unit == Unit::Share) return trace::formatPercent(100 * value);
  if (f.unit == Unit::Count) {
    std::snprintf(text, sizeof text, "%.3g", value);
    return text;
  }
  std::snprintf(text, sizeof text, "%.3g per step", value);
  return text;
}

std::string figureNames() {
  std::string names;
  for (const auto& f : figures()) names += (names.empty() ? "" : ", ") + f.name;
  return names;
}

std::optional<std::string> readFigureRef(const nlohmann::json& j, const char* key, FigureRef& ref) {
  if (!j.is_array() || j.size() != 2 || !j[0].is_string() || !j[1].is_string()) {
    return std::string("\"") + key + "\" must be [\"RUN\", \"FIGURE\"], e.g. [\"ddp\", \"peak\"]";
  }
  ref = {j[0].get<std::string>(), j[1].get<std::string>()};
  return std::nullopt;
}

// "first_mismatch": {"run": "hang", "kind": "missing_rank", "ranks": [1]}.
std::optional<std::string> readMismatchRef(const nlohmann::json& j, Claim& claim) {
  const auto wrong =
      "claim '" + claim.says + "': \"first_mismatch\" is {\"run\": RUN, \"kind\": KIND, \"ranks\": [R, ...]}";
  if (!j.is_object() || !j.contains("run") || !j["run"].is_string() || !j.contains("kind") || !j["kind"].is_string() ||
      !j.contains("ranks") || !j["ranks"].is_array()) {
    return wrong;
  }
  MismatchRef ref{j["run"].get<std::string>(), j["kind"].get<std::string>(), {}};
  for (const auto& r : j["ranks"]) {
    if (!r.is_number_integer()) return wrong;
    ref.ranks.push_back(r.get<int>());
  }
  const auto kinds = {stats::MismatchKind::MissingRank, stats::MismatchKind::OpType, stats::MismatchKind::Size,
                      stats::MismatchKind::Dtype, stats::MismatchKind::State};
  if (std::none_of(kinds.begin(), kinds.end(),
                   [&](stats::MismatchKind k) { return ref.kind == stats::mismatchKindName(k); })) {
    return "claim '" + claim.says + "': \"kind\" '" + ref.kind +
           "' is none of missing_rank, op_type, size, dtype, state";
  }
  claim.mismatch = std::move(ref);
  return std::nullopt;
}

std::optional<std::string> readClaim(const nlohmann::json& j, Claim& claim) {
  if (!j.is_object() || !j.contains("says") || !j["says"].is_string()) {
    return std::string(
        "a claim is an object with \"says\" (the sentence) and either \"order\", \"less\"/\"than\" or "
        "\"first_mismatch\"");
  }
  claim.says = j["says"].get<std::string>();
  if (j.contains("first_mismatch")) return readMismatchRef(j["first_mismatch"], claim);
  if (j.contains("order")) {
    if (!j.contains("figure") || !j["figure"].is_string() || !j["order"].is_array() || j["order"].size() < 2) {
      return "claim '" + claim.says + "': \"order\" takes two or more runs, largest first, and a \"figure\"";
    }
    for (const auto& run : j["order"]) {
      if (!run.is_string()) return "claim '" + claim.says + "': \"order\" lists run labels";
      claim.order.push_back({run.get<std::string>(), j["figure"].get<std::string>()});
    }
    return std::nullopt;
  }
  if (!j.contains("less") || !j.contains("than")) {
    return "claim '" + claim.says + "' has neither \"order\" nor \"less\" and \"than\"";
  }
  if (auto err = readFigureRef(j["less"], "less", claim.less)) return "claim '" + claim.says + "': " + *err;
  if (auto err = readFigureRef(j["than"], "than", claim.than)) return "claim '" + claim.says + "': " + *err;
  if (j.contains("times")) {
    if (!j["times"].is_number() || j["times"].get<double>() <= 0)
      return "claim '" + claim.says + "': \"times\" is a positive number";
    claim.times = j["times"].get<double>();
  }
  return std::nullopt;
}

// Every name the lesson uses refers to something it has.
std::optional<std::string> checkReferences(const Lesson& lesson) {
  auto hasRun = [&](const std::string& label) {
    return std::any_of(lesson.runs.begin(), lesson.runs.end(), [&](const LessonRun& r) { return r.label == label; });
  };
  std::string labels;
  for (const auto& r : lesson.runs) labels += (labels.empty() ? "" : ", ") + r.label;
  for (const auto& c : lesson.captions) {
    if (!c.run.empty() && !hasRun(c.run))
      return "caption '" + c.text.substr(0, 40) + "...' names run '" + c.run + "'; the runs are " + labels;
    const auto& whatIfs = lessonWhatIfs();
    if (!c.whatIf.empty() && std::find(whatIfs.begin(), whatIfs.end(), c.whatIf) == whatIfs.end()) {
      return "caption '" + c.text.substr(0, 40) + "...' names what_if '" + c.whatIf +
             "'; the examples are seed-7b, seed-70b, seed-lora, zero-figure-1";
    }
    if (!c.tab.empty() && !config::findViewTab(c.tab)) {
      return "caption '" + c.text.substr(0, 40) + "...' names tab '" + c.tab + "'; the tabs are " +
             config::viewTabNames();
    }
  }
  for (const auto& q : lesson.questions) {
    std::vector<FigureRef> refs;
    if (q.isOrdering()) {
      for (const auto& run : q.order) refs.push_back({run, q.figure});
    } else {
      refs.push_back(q.value);
    }
    for (const auto& ref : refs) {
      if (!hasRun(ref.run)) return "question '" + q.ask + "' names run '" + ref.run + "'; the runs are " + labels;
      if (!findFigure(ref.figure))
        return "question '" + q.ask + "' names figure '" + ref.figure + "'; the figures are " + figureNames();
    }
  }
  for (const auto& claim : lesson.claims) {
    if (claim.mismatch) {
      if (!hasRun(claim.mismatch->run))
        return "claim '" + claim.says + "' names run '" + claim.mismatch->run + "'; the runs are " + labels;
      continue;
    }
    std::vector<FigureRef> refs = claim.order;
    if (refs.empty()) refs = {claim.less, claim.than};
    for (const auto& ref : refs) {
      if (!hasRun(ref.run)) return "claim '" + claim.says + "' names run '" + ref.run + "'; the runs are " + labels;
      if (!findFigure(ref.figure))
        return "claim '" + claim.says + "' names figure '" + ref.figure + "'; the figures are " + figureNames();
    }
  }
  return std::nullopt;
}

// {parameters}, {fp32_weight_bytes}, {adam_bytes} (2 fp32 moments) and {model_state_bytes} (16 B
// per parameter: fp32 weights, gradients and Adam) of the first run's model: arithmetic on its
// layout, for questions that must not give away a measurement.
std::string expandPlaceholders(std::string text, const config::RunConfig& config) {
  double parameters = 0;
  for (const auto& p : config::modelLayout(config)) parameters += static_cast<double>(p.numel());
  const std::pair<const char*, std::string> values[] = {
      {"{parameters}", trace::formatCount(parameters)},
      {"{fp32_weight_bytes}", trace::formatBytes(4 * parameters)},
      {"{adam_bytes}", trace::formatBytes(8 * parameters)},
      {"{model_state_bytes}", trace::formatBytes(16 * parameters)},
  };
  for (const auto& [key, value] : values) {
    for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + value.size())) {
      text.replace(at, std::string(key).size(), value);
    }
  }
  return text;
}

std::optional<std::string> readQuestions(const nlohmann::json& predict, Lesson& lesson) {
  if (!predict.is_array()) return std::string("\"predict\" lists questions");
  for (const auto& q : predict) {
    if (!q.is_object() || !q.contains("ask") || !q["ask"].is_string())
      return std::string("each question has an \"ask\"");
    Question question;
    question.ask = expandPlaceholders(q["ask"].get<std::string>(), lesson.runs.front().config);
    if (q.contains("order")) {
      Claim asClaim;  // an ordering question reads as an ordering claim
      nlohmann::json shaped = q;
      shaped["says"] = question.ask;
      if (auto err = readClaim(shaped, asClaim)) return "question '" + question.ask + "': " + *err;
      question.figure = asClaim.order.front().figure;
      for (const auto& ref : asClaim.order) question.order.push_back(ref.run);
    } else if (!q.contains("value") || readFigureRef(q["value"], "value", question.value)) {
      return "question '" + question.ask + "' needs \"value\": [\"RUN\", \"FIGURE\"] or \"order\" and \"figure\"";
    }
    lesson.questions.push_back(std::move(question));
  }
  return std::nullopt;
}

std::optional<std::string> parseLesson(const nlohmann::json& j, Lesson& lesson) {
  if (!j.is_object()) return std::string("a lesson is a JSON object with title, config, runs, captions and claims");
  for (const char* key : {"title", "teaches"}) {
    if (!j.contains(key)) return std::string("\"") + key + "\" is missing (a string)";
    if (!j[key].is_string())
      return std::string("\"") + key + "\" is " + files::jsonKindName(j[key]) + " where a string belongs";
  }
  lesson.title = j["title"].get<std::string>();
  lesson.teaches = j["teaches"].get<std::string>();
  config::RunConfig base;
  if (j.contains("config")) {
    if (auto err = config::applyConfigJson(j["config"], base)) return "\"config\": " + *err;
  }
  if (!j.contains("runs") || !j["runs"].is_array() || j["runs"].empty())
    return std::string("\"runs\" lists one or more runs");
  for (const auto& r : j["runs"]) {
    if (!r.is_object() || !r.contains("label") || !r["label"].is_string())
      return std::string("each run has a \"label\"");
    LessonRun run{r["label"].get<std::string>(), base};
    nlohmann::json options = r;
    options.erase("label");
    if (options.contains("expect")) {
      run.expectsHang = options["expect"] == "hang";
      if (!run.expectsHang)
        return "run '" + run.label + "': \"expect\" is \"hang\" (a run that hangs on purpose), or absent";
      options.erase("expect");
    }
    if (auto err = config::applyConfigJson(options, run.config)) return "run '" + run.label + "': " + *err;
    if (auto err = config::validate(run.config)) return "run '" + run.label + "': " + *err;
    if (run.expectsHang && run.config.hangRank.empty()) {
      return "run '" + run.label + "': \"expect\": \"hang\" needs a \"hang-rank\" (R:STEP) that makes it hang";
    }
    lesson.runs.push_back(std::move(run));
  }
  if (!j.contains("captions") || !j["captions"].is_array() || j["captions"].empty())
    return std::string("\"captions\" lists one or more captions");
  for (const auto& c : j["captions"]) {
    if (!c.is_object() || !c.contains("text") || !c["text"].is_string())
      return std::string("each caption has a \"text\"");
    Caption caption;
    caption.text = expandPlaceholders(c["text"].get<std::string>(), lesson.runs.front().config);
    caption.tab = c.value("tab", "");
    caption.at = c.value("at", "");
    caption.run = c.value("run", "");
    caption.whatIf = c.value("what_if", "");
    lesson.captions.push_back(std::move(caption));
  }
  if (j.contains("claims")) {
    for (const auto& c : j["claims"]) {
      Claim claim;
      if (auto err = readClaim(c, claim)) return err;
      lesson.claims.push_back(std::move(claim));
    }
  }
  if (j.contains("predict")) {
    if (auto err = readQuestions(j["predict"], lesson)) return err;
  }
  return checkReferences(lesson);
}

}  // namespace

const std::vector<stats::RankStats>* runStats(const Lesson& lesson,
                                              const std::vector<std::vector<stats::RankStats>>& statsPerRun,
                                              const std::string& label) {
  for (size_t i = 0; i < lesson.runs.size() && i < statsPerRun.size(); ++i) {
    if (lesson.runs[i].label == label) return statsPerRun[i].empty() ? nullptr : &statsPerRun[i];
  }
  return nullptr;
}

const std::vector<std::string>& lessonWhatIfs() {
  static const std::vector<std::string> names = {"seed-7b", "seed-70b", "seed-70b-activations", "seed-lora",
                                                 "zero-figure-1"};
  return names;
}

std::string lessonDirectory() {
  if (const char* dir = std::getenv("SHARDSCOPE_LESSONS")) return dir;
  return SHARDSCOPE_LESSON_DIR;
}

std::vector<std::string> lessonNames() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(lessonDirectory(), ec)) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<std::string> loadLesson(const std::string& nameOrPath, Lesson& lesson) {
  const bool isPath = nameOrPath.find('/') != std::string::npos ||
                      nameOrPath.size() > 5 && nameOrPath.compare(nameOrPath.size() - 5, 5, ".json") == 0;
  const std::string path = isPath ? nameOrPath : lessonDirectory() + "/" + nameOrPath + ".json";
  std::string readError;
  const auto text = files::readFileText(path, readError, files::kMaxConfigBytes);
  std::error_code ec;
  if (!text && std::filesystem::exists(path, ec)) return "lesson file: " + readError;
  if (!text) {
    std::string names;
    for (const auto& n : lessonNames()) names += (names.empty() ? "" : ", ") + n;
    return "no lesson '" + nameOrPath + "' (" + path + "): the lessons are " +
           (names.empty() ? "none (is SHARDSCOPE_LESSONS right?)" : names) + "; 'shardscope lesson' lists them";
  }
  const auto parsed = files::parseUserJson(*text);
  if (!parsed.error.empty()) return "lesson file '" + path + "' is not valid JSON: " + parsed.error;
  const nlohmann::json& j = parsed.value;
  lesson = Lesson{};
  lesson.name = std::filesystem::path(path).stem().string();
  if (auto err = parseLesson(j, lesson)) return "lesson file '" + path + "': " + *err;
  return std::nullopt;
}

FigureUnit figureUnit(const std::string& figure) {
  const FigureDef* f = findFigure(figure);
  return f ? f->unit : FigureUnit::Bytes;
}

std::string formatFigureValue(const std::string& figure, double value) {
  const FigureDef* f = findFigure(figure);
  return f ? formatFigure(*f, value) : std::to_string(value);
}

namespace {
std::string fileStem(const std::string& runLabel) {
  std::string name;
  for (char c : runLabel) name += (c == ' ' || c == '/') ? '_' : c;
  return name;
}
}  // namespace

std::string traceFileName(const std::string& runLabel) { return fileStem(runLabel) + ".json"; }

std::string recordingFileName(const std::string& runLabel) { return fileStem(runLabel) + ".pftrace"; }

std::vector<std::string> missingRecordings(const Lesson& lesson, const std::string& dir) {
  std::vector<std::string> missing;
  for (const auto& run : lesson.runs) {
    const std::string path = dir + "/" + recordingFileName(run.label);
    std::error_code error;
    if (!std::filesystem::is_regular_file(path, error)) missing.push_back(path);
  }
  return missing;
}

const std::vector<std::pair<std::string, std::string>>& lessonFigures() {
  static const std::vector<std::pair<std::string, std::string>> list = [] {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& f : figures()) out.emplace_back(f.name, f.meaning);
    return out;
  }();
  return list;
}

std::optional<double> figureValue(const std::string& figure, const std::vector<stats::RankStats>& ranks) {
  const FigureDef* f = findFigure(figure);
  if (!f || ranks.empty()) return std::nullopt;
  double largest = 0;
  for (const auto& r : ranks) largest = std::max(largest, f->of(r));
  return largest;
}

namespace {

// A hung run's first mismatch against the claim's kind and ranks.
ClaimCheck checkMismatch(const Lesson& lesson, const Claim& claim,
                         const std::vector<std::shared_ptr<const trace::CollectiveLogs>>& logsPerRun) {
  ClaimCheck check;
  check.says = claim.says;
  const MismatchRef& ref = *claim.mismatch;
  const trace::CollectiveLogs* logs = nullptr;
  for (size_t i = 0; i < lesson.runs.size() && i < logsPerRun.size(); ++i) {
    if (lesson.runs[i].label == ref.run) logs = logsPerRun[i].get();
  }
  if (!logs) {
    check.measured = "not measured: " + ref.run + " has no last collectives (it has not hung and ended)";
    return check;
  }
  const auto m = stats::firstMismatch(*logs);
  if (!m) {
    check.measured = ref.run + ": no mismatch. " + stats::whereRanksStand(*logs);
    return check;
  }
  check.holds = stats::mismatchKindName(m->kind) == ref.kind && m->ranks == ref.ranks;
  check.measured =
      ref.run + ": " + stats::mismatchKindName(m->kind) + " at #" + std::to_string(m->seq) + ": " + m->explanation;
  return check;
}

}  // namespace

std::vector<ClaimCheck> checkClaims(const Lesson& lesson, const std::vector<std::vector<stats::RankStats>>& statsPerRun,
                                    const std::vector<std::shared_ptr<const trace::CollectiveLogs>>& logsPerRun) {
  std::vector<ClaimCheck> checks;
  for (const auto& claim : lesson.claims) {
    if (claim.mismatch) {
      checks.push_back(checkMismatch(lesson, claim, logsPerRun));
      continue;
    }
    ClaimCheck check;
    check.says = claim.says;
    std::vector<FigureRef> refs = claim.order.empty() ? std::vector<FigureRef>{claim.less, claim.than} : claim.order;
    std::vector<double> values;
    std::string missing;
    for (const auto& ref : refs) {
      const auto* stats = runStats(lesson, statsPerRun, ref.run);
      const auto value = stats ? figureValue(ref.figure, *stats) : std::nullopt;
      if (!value) missing += (missing.empty() ? "" : ", ") + ref.run;
      values.push_back(value.value_or(0));
    }
    if (!missing.empty()) {
      check.measured = "not measured: " + missing + " has not run to the end";
      checks.push_back(check);
      continue;
    }
    auto shown = [&](size_t i) {
      return refs[i].run + " " + refs[i].figure + " " + formatFigure(*findFigure(refs[i].figure), values[i]);
    };
    if (!claim.order.empty()) {
      check.holds = true;
      check.measured = shown(0);
      for (size_t i = 1; i < values.size(); ++i) {
        const bool falls = values[i - 1] > values[i];
        check.holds &= falls;
        check.measured += std::string(falls ? " > " : " <= ") + shown(i);
      }
    } else {
      check.holds = values[0] < claim.times * values[1];
      char factor[32] = "";
      if (claim.times != 1.0) std::snprintf(factor, sizeof factor, "%g x ", claim.times);
      check.measured = shown(0) + (check.holds ? " < " : " >= ") + factor + shown(1);
    }
    checks.push_back(check);
  }
  return checks;
}

}  // namespace shardscope::lessons
