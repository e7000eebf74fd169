#include "lessons/prediction.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace shardscope::lessons {

namespace {

std::string lowered(std::string text) {
  std::string out;
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

// "30 MiB", "30mb", "3e7" (bytes); "12 ms", "0.5s", "800us" (seconds); "9" (per step, or a count);
// "20%" or "0.2" (a share).
std::optional<double> readQuantity(FigureUnit unit, const std::string& text) {
  const std::string t = lowered(text);
  char* end = nullptr;
  const double number = std::strtod(t.c_str(), &end);
  if (end == t.c_str() || !std::isfinite(number) || number < 0) return std::nullopt;
  const std::string suffix(end);
  struct Suffix {
    const char* name;
    double factor;
  };
  static const Suffix bytes[] = {{"", 1},     {"b", 1},        {"kb", 1e3},        {"mb", 1e6},
                                 {"gb", 1e9}, {"kib", 1024.0}, {"mib", 1048576.0}, {"gib", 1073741824.0}};
  static const Suffix seconds[] = {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};
  static const Suffix perStep[] = {{"", 1}, {"perstep", 1}, {"/step", 1}};
  static const Suffix count[] = {{"", 1}};
  static const Suffix share[] = {{"%", 0.01}, {"", 1}};  // "20%", or the fraction "0.2"
  auto pick = [&](const auto& table) -> std::optional<double> {
    for (const auto& s : table) {
      if (suffix == s.name) return number * s.factor;
    }
    return std::nullopt;
  };
  switch (unit) {
    case FigureUnit::Bytes:
      return pick(bytes);
    case FigureUnit::Seconds:
      return pick(seconds);
    case FigureUnit::PerStep:
      return pick(perStep);
    case FigureUnit::Count:
      return pick(count);
    case FigureUnit::Share: {
      const auto value = pick(share);
      if (value && suffix.empty() && *value > 1) return std::nullopt;  // "20" is 20 %, or 2000 %: said with %
      return value;
    }
  }
  return std::nullopt;
}

std::vector<std::string> splitLabels(const std::string& text) {
  std::vector<std::string> labels;
  std::string part;
  std::stringstream in(text);
  while (std::getline(in, part, text.find('>') != std::string::npos ? '>' : ',')) {
    const auto first = part.find_first_not_of(" \t");
    const auto last = part.find_last_not_of(" \t");
    labels.push_back(first == std::string::npos ? "" : part.substr(first, last - first + 1));
  }
  return labels;
}

}  // namespace

std::string answerHint(const Question& q) {
  if (q.isOrdering()) {
    // Alphabetical: the lesson lists the runs in the right order, which the hint must not give away.
    std::vector<std::string> runs = q.order;
    std::sort(runs.begin(), runs.end());
    std::string labels;
    for (const auto& run : runs) labels += (labels.empty() ? "" : ", ") + run;
    return "the runs " + labels + ", largest first, ',' between them";
  }
  switch (figureUnit(q.value.figure)) {
    case FigureUnit::Bytes:
      return "bytes, e.g. 30 MiB";
    case FigureUnit::Seconds:
      return "a time, e.g. 12 ms";
    case FigureUnit::PerStep:
      return "a count per step, e.g. 9";
    case FigureUnit::Count:
      return "a count, e.g. 4";
    case FigureUnit::Share:
      return "a share, e.g. 20% or 0.2";
  }
  return "";
}

std::optional<Answer> readAnswer(const Question& q, const std::string& text, std::string& error) {
  Answer answer;
  if (!q.isOrdering()) {
    const auto value = readQuantity(figureUnit(q.value.figure), text);
    if (!value) {
      error = "'" + text + "' is not " + answerHint(q);
      return std::nullopt;
    }
    answer.value = *value;
    return answer;
  }
  answer.order = splitLabels(text);
  std::vector<std::string> given = answer.order, expected = q.order;
  std::sort(given.begin(), given.end());
  std::sort(expected.begin(), expected.end());
  if (given != expected) {
    error = "'" + text + "' does not name each of the runs once: " + answerHint(q);
    return std::nullopt;
  }
  return answer;
}

std::optional<Score> scoreAnswer(const Lesson& lesson, const Question& q, const Answer& answer,
                                 const std::vector<std::vector<stats::RankStats>>& statsPerRun) {
  Score score;
  if (!q.isOrdering()) {
    const auto* stats = runStats(lesson, statsPerRun, q.value.run);
    const auto measured = stats ? figureValue(q.value.figure, *stats) : std::nullopt;
    if (!measured) return std::nullopt;
    score.measured = formatFigureValue(q.value.figure, *measured);
    if (*measured <= 0 || answer.value <= 0) {
      score.points = *measured == answer.value ? 100 : 0;
      score.verdict = score.points > 0 ? "exactly" : "the measured value is " + score.measured;
      return score;
    }
    const double ratio = answer.value / *measured;
    score.points = 100.0 * std::max(0.0, 1.0 - std::fabs(std::log2(ratio)));
    char verdict[64];
    std::snprintf(verdict, sizeof verdict, "%.2fx the measured value", ratio);
    score.verdict = verdict;
    return score;
  }
  std::vector<std::pair<double, std::string>> measured;
  for (const auto& run : q.order) {
    const auto* stats = runStats(lesson, statsPerRun, run);
    const auto value = stats ? figureValue(q.figure, *stats) : std::nullopt;
    if (!value) return std::nullopt;
    measured.emplace_back(*value, run);
  }
  std::stable_sort(measured.begin(), measured.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [value, run] : measured) {
    score.measured += (score.measured.empty() ? "" : " > ") + run + " " + formatFigureValue(q.figure, value);
  }
  auto valueOf = [&](const std::string& run) {
    for (const auto& [value, name] : measured) {
      if (name == run) return value;
    }
    return 0.0;
  };
  int pairs = 0, right = 0;
  for (size_t i = 0; i < answer.order.size(); ++i) {
    for (size_t j = i + 1; j < answer.order.size(); ++j) {
      ++pairs;
      right += valueOf(answer.order[i]) >= valueOf(answer.order[j]) ? 1 : 0;
    }
  }
  score.points = pairs > 0 ? 100.0 * right / pairs : 0;
  score.verdict = std::to_string(right) + " of " + std::to_string(pairs) + " pairs in the measured order";
  return score;
}

}  // namespace shardscope::lessons
