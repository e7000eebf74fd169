// "Predict first": interview practice on a lesson. Before its runs start, the lesson asks for
// predictions (a figure of a run, e.g. full_shard's peak, or an ordering of runs by a figure); after
// they end, each answer is scored against what the runs measured.
//   "predict": [{"ask": "...", "value": ["full_shard", "peak"]},
//               {"ask": "...", "figure": "peak", "order": ["ddp", "zero1", "shard_grad_op", "full_shard"]}]
// For an ordering the lesson lists the runs; the answer is those labels, largest first.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lessons/lesson.h"

namespace shardscope::lessons {

// The answer as the user typed it, read: a value in the figure's unit (bytes, seconds, per step) or
// run labels, largest first. Nothing, and a message saying what is expected, when it cannot be read.
struct Answer {
  double value = 0;
  std::vector<std::string> order;
};
std::optional<Answer> readAnswer(const Question& question, const std::string& text, std::string& error);

// A hint for the answer field: "bytes, e.g. 30 MiB", "labels, largest first: ddp, zero1, ...".
std::string answerHint(const Question& question);

struct Score {
  double points = 0;     // 0..100
  std::string measured;  // "30.53 MiB" or "ddp > zero1 > shard_grad_op > full_shard"
  std::string verdict;   // "1.18x the measured value", "5 of 6 pairs in the right order"
};

// Against the measured figures (statsPerRun index for index with lesson.runs). A value scores
// 100 x (1 - |log2(answer / measured)|), at least 0: exact 100, 20 % off about 74, 2x off 0. An
// ordering scores the share of its pairs in the measured order.
std::optional<Score> scoreAnswer(const Lesson& lesson, const Question& question, const Answer& answer,
                                 const std::vector<std::vector<stats::RankStats>>& statsPerRun);

}  // namespace shardscope::lessons
