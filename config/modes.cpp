#include "config/modes.h"

#include "files/user_json.h"

namespace shardscope::config {

const std::vector<ModeName<ModelKind>>& modeNames(ModelKind) {
  static const std::vector<ModeName<ModelKind>> names = {{ModelKind::Mlp, "mlp"}, {ModelKind::Gpt, "gpt"}};
  return names;
}
const char* modeOption(ModelKind) { return "model"; }

const std::vector<ModeName<OptimizerKind>>& modeNames(OptimizerKind) {
  static const std::vector<ModeName<OptimizerKind>> names = {
      {OptimizerKind::Sgd, "sgd"}, {OptimizerKind::Adam, "adam"}, {OptimizerKind::AdamW, "adamw"}};
  return names;
}
const char* modeOption(OptimizerKind) { return "optimizer"; }

const std::vector<ModeName<DeviceKind>>& modeNames(DeviceKind) {
  static const std::vector<ModeName<DeviceKind>> names = {{DeviceKind::Cpu, "cpu"}, {DeviceKind::Cuda, "cuda"}};
  return names;
}
const char* modeOption(DeviceKind) { return "device"; }

const std::vector<ModeName<BindCores>>& modeNames(BindCores) {
  static const std::vector<ModeName<BindCores>> names = {{BindCores::Off, "off"}, {BindCores::Rank, "rank"}};
  return names;
}
const char* modeOption(BindCores) { return "bind-cores"; }

const std::vector<ModeName<Precision>>& modeNames(Precision) {
  static const std::vector<ModeName<Precision>> names = {{Precision::Fp32, "fp32"}, {Precision::Bf16, "bf16"}};
  return names;
}
const char* modeOption(Precision) { return "precision"; }

const std::vector<ModeName<Checkpointing>>& modeNames(Checkpointing) {
  static const std::vector<ModeName<Checkpointing>> names = {{Checkpointing::Off, "off"},
                                                             {Checkpointing::Blocks, "blocks"}};
  return names;
}
const char* modeOption(Checkpointing) { return "activation-checkpointing"; }

const std::vector<ModeName<RecordingMode>>& modeNames(RecordingMode) {
  static const std::vector<ModeName<RecordingMode>> names = {
      {RecordingMode::On, "on"}, {RecordingMode::Off, "off"}, {RecordingMode::Alternate, "alternate"}};
  return names;
}
const char* modeOption(RecordingMode) { return "recording"; }

const std::vector<ModeName<StepGateMode>>& modeNames(StepGateMode) {
  static const std::vector<ModeName<StepGateMode>> names = {
      {StepGateMode::Off, "off"}, {StepGateMode::Group, "group"}, {StepGateMode::Step, "step"}};
  return names;
}
const char* modeOption(StepGateMode) { return "step-gate"; }

const std::vector<ModeName<PipelineSchedule>>& modeNames(PipelineSchedule) {
  static const std::vector<ModeName<PipelineSchedule>> names = {{PipelineSchedule::GPipe, "gpipe"},
                                                                {PipelineSchedule::OneFOneB, "1f1b"},
                                                                {PipelineSchedule::Interleaved1F1B, "interleaved_1f1b"},
                                                                {PipelineSchedule::ZeroBubble, "zero_bubble"},
                                                                {PipelineSchedule::Zbv, "zbv"},
                                                                {PipelineSchedule::DualPipeV, "dualpipev"}};
  return names;
}
const char* modeOption(PipelineSchedule) { return "schedule"; }

const std::vector<ModeName<MemoryCheck>>& modeNames(MemoryCheck) {
  static const std::vector<ModeName<MemoryCheck>> names = {{MemoryCheck::On, "on"}, {MemoryCheck::Off, "off"}};
  return names;
}
const char* modeOption(MemoryCheck) { return "memory-check"; }

const std::vector<ModeName<Offload>>& modeNames(Offload) {
  static const std::vector<ModeName<Offload>> names = {{Offload::Off, "off"}, {Offload::Cpu, "cpu"}};
  return names;
}
const char* modeOption(Offload) { return "offload"; }

std::string unknownModeMessage(const char* option, const std::string& given, const std::string& choices) {
  return std::string("--") + option + " '" + files::clipped(given) + "' is not known; choose one of: " + choices + ".";
}

std::optional<std::string> modeListProblem(const std::string& text, const char* option, const char* what,
                                           const std::string& choices, const std::string& badEntry) {
  const std::string given = std::string(option) + " '" + files::clipped(text) + "'";
  if (badEntry.empty()) {
    return given + " has an empty entry; list some of " + choices + ", separated by single commas.";
  }
  std::string example = choices;
  for (size_t at; (at = example.find(", ")) != std::string::npos;) example.erase(at + 1, 1);
  return given + ": '" + files::clipped(badEntry) + "' is not a " + what + "; list some of " + choices +
         ", separated by commas (e.g. " + option + " " + example + ").";
}

}  // namespace shardscope::config
