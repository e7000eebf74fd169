#include "app/cli_options.h"

#include <cctype>

namespace shardscope::app {

namespace {

// Whether `text` names the option --KEY itself (not --KEYs, nor --KEY-more).
bool namesOption(const std::string& text, const std::string& key) {
  const std::string option = "--" + key;
  const auto partOfName = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; };
  for (size_t at = text.find(option); at != std::string::npos; at = text.find(option, at + 1)) {
    const size_t end = at + option.size();
    if ((at == 0 || !partOfName(text[at - 1])) && (end == text.size() || !partOfName(text[end]))) return true;
  }
  return false;
}

std::string helpWithDefault(const config::ConfigField& field) {
  const std::string value = config::fieldText(config::RunConfig(), field);
  // Paths are empty by default: nothing is written unless asked.
  return value.empty() ? field.help : field.help + " [default: " + value + "]";
}

}  // namespace

void RunOptions::addTo(CLI::App& cmd, bool withOutputs) {
  for (const auto& field : config::configFields()) {
    if (field.group != config::FieldGroup::Training && !withOutputs) continue;
    std::visit([&](auto member) { bindOption(cmd, field, member); }, field.member);
  }
  cmd.add_option("--config", configPath_,
                 "JSON file with the same keys as these options (e.g. {\"model\": \"gpt\"}); "
                 "options on the command line override it");
}

template <typename T>
void RunOptions::bindOption(CLI::App& cmd, const config::ConfigField& field, T config::RunConfig::*member) {
  const std::string flag = std::string("--") + field.key;
  if constexpr (config::kIsMode<T>) {
    // A mode is read as text and parsed in resolve(), so an unknown name gets shardscope's message
    // (naming the choices) rather than CLI11's about an integer.
    std::string& text = modeTexts_[field.key];
    auto* option = cmd.add_option(flag, text, helpWithDefault(field));
    bindings_.push_back(
        {field.key, option, [&text, member](config::RunConfig& c) { return config::readMode(text, c.*member); }});
  } else {
    CLI::Option* option = nullptr;
    if constexpr (std::is_same_v<T, bool>) {
      // A switch: --sequence-parallel, or --sequence-parallel=false over a config file's true.
      option = cmd.add_flag(flag, parsed_.*member, helpWithDefault(field));
    } else {
      option = cmd.add_option(flag, parsed_.*member, helpWithDefault(field));
    }
    bindings_.push_back({field.key, option, [this, member](config::RunConfig& c) {
                           c.*member = parsed_.*member;
                           return std::optional<std::string>();
                         }});
  }
}

std::optional<std::string> RunOptions::resolve(config::RunConfig& out) {
  out = config::RunConfig();
  fileKeys_.clear();
  if (!configPath_.empty()) {
    if (auto err = config::loadConfigFile(configPath_, out, &fileKeys_)) return err;
  }
  for (const auto& binding : bindings_) {
    if (binding.option->count() == 0) continue;
    if (auto err = binding.apply(out)) return err;
  }
  return std::nullopt;
}

std::string RunOptions::located(const std::string& error) const {
  std::string keys;
  int count = 0;
  for (const auto& binding : bindings_) {
    const auto spelled = fileKeys_.find(binding.key);
    // A value the command line gave over the file's is not the file's.
    if (spelled == fileKeys_.end() || binding.option->count() > 0 || !namesOption(error, binding.key)) continue;
    keys += (count++ == 0 ? "\"" : ", \"") + spelled->second + "\"";
  }
  if (count == 0) return error;
  return "config file '" + configPath_ + "', " + (count == 1 ? "key " : "keys ") + keys + ": " + error;
}

}  // namespace shardscope::app
