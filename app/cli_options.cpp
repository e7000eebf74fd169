#include "app/cli_options.h"

namespace shardscope::app {

namespace {

std::string helpWithDefault(const ConfigField& field) {
  const std::string value = fieldText(RunConfig(), field);
  // Paths are empty by default: nothing is written unless asked.
  return value.empty() ? field.help : field.help + " [default: " + value + "]";
}

}  // namespace

void RunOptions::addTo(CLI::App& cmd, bool withOutputs) {
  for (const auto& field : configFields()) {
    if (field.group != FieldGroup::Training && !withOutputs) continue;
    std::visit([&](auto member) { bindOption(cmd, field, member); }, field.member);
  }
  cmd.add_option("--config", configPath_,
                 "JSON file with the same keys as these options (e.g. {\"model\": \"gpt\"}); "
                 "options on the command line override it");
}

template <typename T>
void RunOptions::bindOption(CLI::App& cmd, const ConfigField& field, T RunConfig::*member) {
  const std::string flag = std::string("--") + field.key;
  if constexpr (kIsMode<T>) {
    // A mode is read as text and parsed in resolve(), so an unknown name gets shardscope's message
    // (naming the choices) rather than CLI11's about an integer.
    std::string& text = modeTexts_[field.key];
    auto* option = cmd.add_option(flag, text, helpWithDefault(field));
    bindings_.emplace_back(option, [&text, member](RunConfig& c) { return readMode(text, c.*member); });
  } else {
    CLI::Option* option = nullptr;
    if constexpr (std::is_same_v<T, bool>) {
      // A switch: --sequence-parallel, or --sequence-parallel=false over a config file's true.
      option = cmd.add_flag(flag, parsed_.*member, helpWithDefault(field));
    } else {
      option = cmd.add_option(flag, parsed_.*member, helpWithDefault(field));
    }
    bindings_.emplace_back(option, [this, member](RunConfig& c) {
      c.*member = parsed_.*member;
      return std::optional<std::string>();
    });
  }
}

std::optional<std::string> RunOptions::resolve(RunConfig& out) const {
  out = RunConfig();
  if (!configPath_.empty()) {
    if (auto err = loadConfigFile(configPath_, out)) return err;
  }
  for (const auto& [option, apply] : bindings_) {
    if (option->count() == 0) continue;
    if (auto err = apply(out)) return err;
  }
  return std::nullopt;
}

}  // namespace shardscope::app
