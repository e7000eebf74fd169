// JSON from a file a user hands us (a config, a summary, a trace, a lesson), parsed so that no input
// can crash the reader: text nested deeper than kMaxJsonDepth is refused before it is parsed, so no
// deep tree is ever built for a recursive walk (dump, comparison, a message) to overflow the stack on.
#pragma once

#include <functional>
#include <istream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace shardscope::files {

constexpr int kMaxJsonDepth = 64;  // shardscope's own files nest 5 levels at most

struct UserJson {
  nlohmann::json value;  // discarded (is_discarded()) when error is set
  std::string error;     // "nested deeper than 64 levels", or the parser's own message
  bool tooDeep = false;  // the error is the depth refused (valid JSON, maybe, but no file of ours)
};

UserJson parseUserJson(const std::string& text, bool allowComments = false);

// The same for a document too large to hold as one tree (a trace of millions of events): the
// elements of the top-level object's array `arrayKey` are built one at a time, handed to
// `onElement` (false stops the read) and dropped. `value` holds the other top-level keys, and
// `arrayKey` as an empty array when it was one (as it was, when it was something else).
UserJson parseUserJsonStreaming(const std::string& text, const std::string& arrayKey,
                                const std::function<bool(const nlohmann::json& element)>& onElement);
// The same, read from a stream as it is parsed (files::FileTextStream: a file of gigabytes).
UserJson parseUserJsonStreaming(std::istream& text, const std::string& arrayKey,
                                const std::function<bool(const nlohmann::json& element)>& onElement);

// What a JSON value is, for a message: "a number", "a string", "an object", "an array", "true or
// false", "null".
std::string jsonKindName(const nlohmann::json& value);

// What a field of a file's object should hold: a number, a string or an object.
enum class JsonKind { Number, String, Object };
struct ExpectedField {
  const char* name;
  JsonKind kind;
};
// The first of `fields` that `object` holds as something else, said as `"ts" is a string where a
// number belongs` (prefixed with `path`, e.g. "args."); "" when each is absent or of its kind. A
// reader names this instead of the JSON library's "type must be number, but is string".
std::string wrongKindOfField(const nlohmann::json& object, const std::vector<ExpectedField>& fields,
                             const std::string& path = "");

// At most 60 characters of a value in a message (the first 57 and "..." past that).
std::string clipped(const std::string& text);
std::string shownValue(const nlohmann::json& value);  // clipped(value.dump())
// A number in a message as the user would have typed it: "1e-30", "-1", "0.5", "80" (%g; not
// std::to_string's "-1.000000").
std::string shownNumber(double value);

}  // namespace shardscope::files
