// Every mode of a run configuration as an enum, with one table per enum naming its values. Code
// branches on the enums; strings exist only at the boundary (the CLI, config files, summaries,
// docs), where parseMode() reads a name once and an unknown name cannot get past it.
//
// A mode E is an enum with an overload `const std::vector<ModeName<E>>& modeNames(E)` and
// `const char* modeOption(E)` (the option and config key, e.g. "precision"); the templates below
// give every mode the same parsing, printing, JSON and error wording.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

namespace shardscope::config {

enum class ModelKind : uint8_t { Mlp, Gpt };
// In the order of what they shard (the ZeRO stages); what each means: config/strategies.h.
enum class StrategyKind : uint8_t { Ddp, Zero1, ShardGradOp, FullShard, HybridShardZero2, HybridShard, NoShard };
enum class OptimizerKind : uint8_t { Sgd, Adam, AdamW };
enum class DeviceKind : uint8_t { Cpu, Cuda };
enum class BindCores : uint8_t { Off, Rank };
enum class Precision : uint8_t { Fp32, Bf16 };
enum class Checkpointing : uint8_t { Off, Blocks };
enum class RecordingMode : uint8_t { On, Off, Alternate };
enum class StepGateMode : uint8_t { Off, Group, Step };
enum class MemoryCheck : uint8_t { On, Off };
enum class Offload : uint8_t { Off, Cpu };
// A pipeline's order of forwards and backwards (--pp): config/pipeline_schedule.h.
enum class PipelineSchedule : uint8_t { GPipe, OneFOneB, Interleaved1F1B, ZeroBubble, Zbv, DualPipeV };

template <typename E>
struct ModeName {
  E value;
  const char* name;
};

// The tables (config/modes.cpp; the strategies' names come from config/strategies.cpp).
const std::vector<ModeName<ModelKind>>& modeNames(ModelKind);
const std::vector<ModeName<StrategyKind>>& modeNames(StrategyKind);
const std::vector<ModeName<OptimizerKind>>& modeNames(OptimizerKind);
const std::vector<ModeName<DeviceKind>>& modeNames(DeviceKind);
const std::vector<ModeName<BindCores>>& modeNames(BindCores);
const std::vector<ModeName<Precision>>& modeNames(Precision);
const std::vector<ModeName<Checkpointing>>& modeNames(Checkpointing);
const std::vector<ModeName<RecordingMode>>& modeNames(RecordingMode);
const std::vector<ModeName<StepGateMode>>& modeNames(StepGateMode);
const std::vector<ModeName<MemoryCheck>>& modeNames(MemoryCheck);
const std::vector<ModeName<Offload>>& modeNames(Offload);
const std::vector<ModeName<PipelineSchedule>>& modeNames(PipelineSchedule);

const char* modeOption(ModelKind);
const char* modeOption(StrategyKind);
const char* modeOption(OptimizerKind);
const char* modeOption(DeviceKind);
const char* modeOption(BindCores);
const char* modeOption(Precision);
const char* modeOption(Checkpointing);
const char* modeOption(RecordingMode);
const char* modeOption(StepGateMode);
const char* modeOption(MemoryCheck);
const char* modeOption(Offload);
const char* modeOption(PipelineSchedule);

template <typename E, typename = void>
struct IsMode : std::false_type {};
template <typename E>
struct IsMode<E, std::void_t<decltype(modeNames(E{}))>> : std::is_enum<E> {};
template <typename E>
constexpr bool kIsMode = IsMode<E>::value;

template <typename E, std::enable_if_t<kIsMode<E>, int> = 0>
const char* modeName(E value) {
  for (const auto& entry : modeNames(E{})) {
    if (entry.value == value) return entry.name;
  }
  return "?";  // unreachable: every enumerator is in its table (tests/config/modes_test.cpp)
}

template <typename E, std::enable_if_t<kIsMode<E>, int> = 0>
std::optional<E> parseMode(std::string_view name) {
  for (const auto& entry : modeNames(E{})) {
    if (name == entry.name) return entry.value;
  }
  return std::nullopt;
}

// Every value, in table order.
template <typename E, std::enable_if_t<kIsMode<E>, int> = 0>
std::vector<E> allModes() {
  std::vector<E> values;
  for (const auto& entry : modeNames(E{})) values.push_back(entry.value);
  return values;
}

// "fp32 | bf16": the choices, for help texts.
template <typename E, std::enable_if_t<kIsMode<E>, int> = 0>
std::string modeChoices(const char* separator = " | ") {
  std::string list;
  for (const auto& entry : modeNames(E{})) list += (list.empty() ? "" : separator) + std::string(entry.name);
  return list;
}

// The message for a name that is none of E's: "--precision 'fp64' is not known; choose one of: ...".
std::string unknownModeMessage(const char* option, const std::string& given, const std::string& choices);
template <typename E, std::enable_if_t<kIsMode<E>, int> = 0>
std::string unknownModeMessage(const std::string& given) {
  return unknownModeMessage(modeOption(E{}), given, modeChoices<E>(", "));
}

// Reads a name into `out`, or returns the message above.
template <typename E, std::enable_if_t<kIsMode<E>, int> = 0>
std::optional<std::string> readMode(const std::string& name, E& out) {
  const auto value = parseMode<E>(name);
  if (!value) return unknownModeMessage<E>(name);
  out = *value;
  return std::nullopt;
}

// "ddp,full_shard" into `out`, each once, in the order given; an error naming the bad or empty
// entry, the choices and the fix otherwise. `option`: the list's own ("--strategies"); `what`:
// one entry's noun ("strategy").
std::optional<std::string> modeListProblem(const std::string& text, const char* option, const char* what,
                                           const std::string& choices, const std::string& badEntry);
template <typename E, std::enable_if_t<kIsMode<E>, int> = 0>
std::optional<std::string> parseModeList(const std::string& text, const char* option, const char* what,
                                         std::vector<E>& out) {
  out.clear();
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t end = std::min(text.find(',', begin), text.size());
    const std::string name = text.substr(begin, end - begin);
    const auto value = parseMode<E>(name);
    if (!value) return modeListProblem(text, option, what, modeChoices<E>(", "), name);
    if (std::find(out.begin(), out.end(), *value) == out.end()) out.push_back(*value);
    begin = end + 1;
  }
  return std::nullopt;
}

// JSON and streams write a mode by its name, never its number (nlohmann finds these by ADL).
template <typename E, std::enable_if_t<kIsMode<E>, int> = 0>
void to_json(nlohmann::json& json, E value) {
  json = modeName(value);
}

template <typename E, std::enable_if_t<kIsMode<E>, int> = 0>
std::ostream& operator<<(std::ostream& out, E value) {
  return out << modeName(value);
}

}  // namespace shardscope::config
