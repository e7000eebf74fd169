#include "app/command_line_parse.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <cstdio>
#include <string>
#include <vector>

namespace shardscope::app {

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "shardscope: error: %s\n", message.c_str());
  return 2;
}

// Edit distance with adjacent swaps counted as one edit ("rnu" is one from "run"): how many letters
// to add, drop, change or swap to turn `a` into `b`.
size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// The candidate `word` is most likely a typo of: at most two edits away, and those edits fewer
// than half its letters after the dashes (so "--x" suggests nothing).
std::string closest(const std::string& word, const std::vector<std::string>& candidates) {
  const size_t letters = word.size() - std::min(word.find_first_not_of('-'), word.size());
  std::string best;
  size_t bestDistance = 3;
  for (const auto& c : candidates) {
    const size_t d = editDistance(word, c);
    if (d < bestDistance && 2 * d < letters) {
      best = c;
      bestDistance = d;
    }
  }
  return best;
}

std::string didYouMean(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string guess = closest(word, candidates);
  return guess.empty() ? "" : " Did you mean " + guess + "?";
}

std::vector<std::string> optionNames(const CLI::App& command) {
  std::vector<std::string> names;
  for (const CLI::Option* option : command.get_options()) {
    for (const auto& name : option->get_lnames()) names.push_back("--" + name);
  }
  return names;
}

std::vector<std::string> commandNames(CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* command : app.get_subcommands([](CLI::App*) { return true; })) {
    names.push_back(command->get_name());
  }
  return names;
}

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) out += (i == 0 ? "" : i + 1 == words.size() ? " and " : ", ") + words[i];
  return out;
}

// The command whose options were being read when parsing stopped: a subcommand, or the program.
CLI::App* activeCommand(CLI::App& app) {
  auto selected = app.get_subcommands();
  return selected.empty() ? &app : selected.front();
}

std::string commandLine(const CLI::App& command, const CLI::App& app) {
  return &command == &app ? "shardscope" : "shardscope " + command.get_name();
}

std::string seeHelp(const CLI::App& command, const CLI::App& app) {
  return " '" + commandLine(command, app) + " --help' lists " + (&command == &app ? "the commands." : "its options.");
}

// What an option's value must look like, in words, with its default as an example when the help
// gives one (cli_options.cpp writes it into the description as "[default: X]" or "[default: X,
// why]"); a text option without a default is described by its help.
std::string expectedValue(const CLI::Option& option) {
  // A switch: given alone, or with =true / =false after it.
  if (option.get_expected_min() == 0) return "true or false after '=', e.g. " + option.get_name() + "=false";
  const std::string type = option.get_type_name();
  const std::string description = option.get_description();
  const std::string tag = "[default: ";
  const auto at = description.find(tag);
  const auto end = description.find(']', at);
  if (at == std::string::npos || end == std::string::npos) {
    return type == "INT" ? "a whole number" : type == "FLOAT" ? "a number" : description;
  }
  std::string example = description.substr(at + tag.size(), end - at - tag.size());
  example = example.substr(0, example.find(", "));
  return std::string(type == "INT"     ? "a whole number"
                     : type == "FLOAT" ? "a number"
                                       : "a value") +
         ", e.g. " + option.get_name() + " " + example;
}

int reportExtras(CLI::App& app, CLI::App& command, const std::vector<std::string>& extras) {
  std::string first = extras.front();
  const bool isOption = first.size() > 1 && first[0] == '-';
  if (isOption) first = first.substr(0, first.find('='));
  if (&command == &app) {
    if (!isOption) {
      return fail("'" + first + "' is not a command; the commands are " + joined(commandNames(app)) + "." +
                  didYouMean(first, commandNames(app)) + seeHelp(app, app));
    }
    return fail(first +
                " is not an option of shardscope itself: options follow a command, e.g. "
                "'shardscope run " +
                first + " ...'." + seeHelp(app, app));
  }
  if (isOption) {
    return fail(first + " is not an option of '" + commandLine(command, app) + "'." +
                didYouMean(first, optionNames(command)) + seeHelp(command, app));
  }
  const auto options = command.get_options();
  const bool takesFile =
      std::any_of(options.begin(), options.end(), [](const CLI::Option* o) { return o->get_positional(); });
  return fail("'" + first + "' was not expected by '" + commandLine(command, app) + "': " +
              (takesFile ? "it takes one FILE, and options of one value each."
                         : "its options take one value each (--world 2, not --world 2 3).") +
              seeHelp(command, app));
}

// CLI11's message says which option failed; the option itself says what it wanted.
int reportParseError(CLI::App& app, const CLI::ParseError& error) {
  CLI::App& command = *activeCommand(app);
  const std::string message = error.what();
  const auto optionNamed = [&](const std::string& name) { return command.get_option_no_throw(name); };

  if (dynamic_cast<const CLI::ConversionError*>(&error)) {
    const std::string prefix = "Could not convert: ";  // then "NAME = VALUE"
    const auto equals = message.find(" = ");
    if (message.rfind(prefix, 0) == 0 && equals != std::string::npos) {
      const std::string name = message.substr(prefix.size(), equals - prefix.size());
      const std::string value = message.substr(equals + 3);
      if (const CLI::Option* option = optionNamed(name)) {
        const bool digits = !value.empty() && value.find_first_not_of("-+0123456789") == std::string::npos;
        if (digits) {  // a whole number, but one the option's type cannot hold
          return fail(name + " is " + value + ", out of range: the largest it takes is " +
                      std::to_string(std::numeric_limits<int>::max()) + "; " + expectedValue(*option) + "." +
                      seeHelp(command, app));
        }
        return fail(name + " is '" + value + "'; it takes " + expectedValue(*option) + "." + seeHelp(command, app));
      }
    }
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error)) {
    const auto colon = message.find(": ");  // "NAME: 1 required TYPE missing"
    if (colon != std::string::npos && message.find(" missing") != std::string::npos) {
      const std::string name = message.substr(0, colon);
      if (const CLI::Option* option = optionNamed(name)) {
        return fail(name + " needs a value: " + expectedValue(*option) + "." + seeHelp(command, app));
      }
    }
    const std::string repeated = "At Most 1 required but received ";  // "NAME: At Most 1 ... N"
    const auto at = message.find(repeated);
    if (colon != std::string::npos && at != std::string::npos) {
      const std::string name = message.substr(0, colon);
      if (const CLI::Option* option = optionNamed(name)) {
        return fail(name + " is given " + message.substr(at + repeated.size()) +
                    " times; give it once: " + expectedValue(*option) + "." + seeHelp(command, app));
      }
    }
  }
  if (dynamic_cast<const CLI::RequiredError*>(&error)) {
    const auto is = message.find(" is required");  // "NAME is required"
    if (is != std::string::npos) {
      const std::string name = message.substr(0, is);
      if (const CLI::Option* option = optionNamed(name)) {
        return fail("'" + commandLine(command, app) + "' needs " + name + ": " + option->get_description() + "." +
                    seeHelp(command, app));
      }
    }
  }
  return fail(message + "." + seeHelp(command, app));
}

// A number as the README says they are read: decimal digits with an optional sign, and for a
// FLOAT a fraction and an exponent (1e-3, .5). CLI11 and strtod also take 0x2, 0b10, 0o7 and hex
// floats (0x1p-3), which nobody means on a command line that documents decimal.
bool isDecimal(const std::string& text, bool fractional) {
  size_t i = text.find_first_not_of(" \t");
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
  const auto digitsFrom = [&](size_t& at) {
    const size_t start = at;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9') ++at;
    return at - start;
  };
  size_t digits = digitsFrom(i);
  if (fractional && i < text.size() && text[i] == '.') digits += digitsFrom(++i);
  if (digits == 0)
    return fractional && i < text.size() && (text[i] == 'i' || text[i] == 'n' || text[i] == 'I' || text[i] == 'N');
  if (fractional && i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (digitsFrom(i) == 0) return false;
  }
  return text.find_first_not_of(" \t", i) == std::string::npos;
}

// What CLI11 converts without complaint: an empty value to 0 (or an empty text), a whole number past 64 bits to the
// largest one, 1e400 to infinity, "nan". Each is a usage error naming the option.
std::optional<int> checkNumbers(CLI::App& app, CLI::App& command) {
  for (const CLI::Option* option : command.get_options()) {
    const std::string type = option->get_type_name();
    const std::string name = option->get_name();
    for (const std::string& text : option->results()) {  // no option means anything by an empty value
      if (text.find_first_not_of(" \t") == std::string::npos) {
        const bool number = type == "INT" || type == "FLOAT" || type == "UINT";
        return fail(name + " is empty; " +
                    (number ? "it takes " + expectedValue(*option) : "give it a value, or leave it out") + "." +
                    seeHelp(command, app));
      }
    }
    if (type != "INT" && type != "FLOAT" && type != "UINT") continue;
    for (const std::string& text : option->results()) {
      if (!isDecimal(text, type == "FLOAT")) {
        return fail(name + " is '" + text + "'; numbers are read in decimal only (not 0x.., 0b.. or 0o..): " +
                    expectedValue(*option) + "." + seeHelp(command, app));
      }
      errno = 0;
      if (type != "FLOAT") {
        (void)std::strtoll(text.c_str(), nullptr, 10);
        if (errno == ERANGE) {
          return fail(name + " is " + text + ", out of range: it takes a whole number within 64 bits; " +
                      expectedValue(*option) + "." + seeHelp(command, app));
        }
      } else if (!std::isfinite(std::strtod(text.c_str(), nullptr))) {
        return fail(name + " is '" + text + "'; it takes a finite number: " + expectedValue(*option) + "." +
                    seeHelp(command, app));
      }
    }
  }
  return std::nullopt;
}

void allowExtras(CLI::App& command) {
  // Unknown words are collected instead of thrown, so the error can name the command they were
  // given to and suggest the option that was meant.
  command.allow_extras();
  for (CLI::App* sub : command.get_subcommands([](CLI::App*) { return true; })) allowExtras(*sub);
}

}  // namespace

std::optional<int> parseCommandLine(CLI::App& app, int argc, char** argv) {
  allowExtras(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return reportParseError(app, e);
  }
  CLI::App& command = *activeCommand(app);
  if (auto stop = checkNumbers(app, command)) return stop;
  if (!command.remaining().empty()) return reportExtras(app, command, command.remaining());
  if (&command != &app && !app.remaining().empty()) return reportExtras(app, app, app.remaining());
  return std::nullopt;
}

}  // namespace shardscope::app
