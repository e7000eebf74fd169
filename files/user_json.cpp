#include "files/user_json.h"

#include <algorithm>

namespace shardscope::files {

namespace {

// The deepest nesting of [ and { outside strings: one linear pass, far cheaper than the parse
// (nlohmann's callback parser, which could refuse depth as it goes, is ten times slower on a
// 100 MB trace).
int nestingDepth(const std::string& text) {
  int depth = 0, deepest = 0;
  bool inString = false, escaped = false;
  for (const char c : text) {
    if (inString) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') inString = false;
      continue;
    }
    if (c == '"') inString = true;
    else if (c == '[' || c == '{') deepest = std::max(deepest, ++depth);
    else if (c == ']' || c == '}') --depth;
    if (deepest > kMaxJsonDepth) return deepest;  // no need to read further
  }
  return deepest;
}

}  // namespace

UserJson parseUserJson(const std::string& text, bool allowComments) {
  UserJson out;
  if (nestingDepth(text) > kMaxJsonDepth) {
    out.value = nlohmann::json(nlohmann::json::value_t::discarded);
    out.error = "it is nested deeper than " + std::to_string(kMaxJsonDepth) + " levels";
    return out;
  }
  try {
    out.value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/true, allowComments);
  } catch (const nlohmann::json::exception& e) {  // a syntax error, a number past a double (1e400)
    out.value = nlohmann::json(nlohmann::json::value_t::discarded);
    out.error = e.what();
  }
  return out;
}

std::string shownValue(const nlohmann::json& value) { return clipped(value.dump()); }

std::string clipped(const std::string& text) { return text.size() > 60 ? text.substr(0, 57) + "..." : text; }

}  // namespace shardscope::files
