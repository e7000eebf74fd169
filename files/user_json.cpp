#include "files/user_json.h"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <set>
#include <vector>

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
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"')
      inString = true;
    else if (c == '[' || c == '{')
      deepest = std::max(deepest, ++depth);
    else if (c == ']' || c == '}')
      --depth;
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
    out.tooDeep = true;
    return out;
  }
  // A key twice in one object: nlohmann keeps the last value without a word, so {"world": 2,
  // "world": 3} would run at 3. Each open object's keys so far, to refuse the second one.
  std::vector<std::set<std::string>> keysOfOpenObjects;
  std::string duplicate;
  const auto noteKeys = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (event == Event::object_start) keysOfOpenObjects.emplace_back();
    if (event == Event::object_end && !keysOfOpenObjects.empty()) keysOfOpenObjects.pop_back();
    if (event == Event::key && !keysOfOpenObjects.back().insert(parsed.get<std::string>()).second &&
        duplicate.empty()) {
      duplicate = parsed.get<std::string>();
    }
    return true;
  };
  try {
    out.value = nlohmann::json::parse(text, noteKeys, /*allow_exceptions=*/true, allowComments);
  } catch (const nlohmann::json::exception& e) {  // a syntax error, a number past a double (1e400)
    out.value = nlohmann::json(nlohmann::json::value_t::discarded);
    out.error = e.what();
  }
  if (out.error.empty() && !duplicate.empty()) {
    out.value = nlohmann::json(nlohmann::json::value_t::discarded);
    out.error = "the key \"" + clipped(duplicate) + "\" appears twice in one object; keep the one you mean";
  }
  return out;
}

std::string shownValue(const nlohmann::json& value) { return clipped(value.dump()); }

std::string jsonKindName(const nlohmann::json& value) {
  if (value.is_number()) return "a number";
  if (value.is_string()) return "a string";
  if (value.is_object()) return "an object";
  if (value.is_array()) return "an array";
  if (value.is_boolean()) return "true or false";
  return "null";
}

std::string wrongKindOfField(const nlohmann::json& object, const std::vector<ExpectedField>& fields,
                             const std::string& path) {
  if (!object.is_object()) return "";
  for (const auto& field : fields) {
    const auto it = object.find(field.name);
    if (it == object.end()) continue;
    const bool fits = field.kind == JsonKind::Number   ? it->is_number()
                      : field.kind == JsonKind::String ? it->is_string()
                                                       : it->is_object();
    if (fits) continue;
    const char* wanted = field.kind == JsonKind::Number   ? "a number"
                         : field.kind == JsonKind::String ? "a string"
                                                          : "an object";
    return "\"" + path + field.name + "\" is " + jsonKindName(*it) + " where " + wanted + " belongs";
  }
  return "";
}

std::string shownNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

std::string clipped(const std::string& text) { return text.size() > 60 ? text.substr(0, 57) + "..." : text; }

}  // namespace shardscope::files

namespace shardscope::files {

namespace {

// Builds one JSON value from SAX events, as nlohmann's own DOM parser does, refusing a number past
// a double (1e400) as that parser does.
class ValueBuilder {
 public:
  bool building() const { return started_; }
  bool done() const { return started_ && open_.empty(); }
  nlohmann::json take() {
    started_ = false;
    return std::move(root_);
  }
  void key(std::string k) { key_ = std::move(k); }
  void value(nlohmann::json v) { place(std::move(v)); }
  void start(nlohmann::json container) { open_.push_back(place(std::move(container))); }
  void end() { open_.pop_back(); }

 private:
  // Only the open path is pointed into: an array's earlier children may move, never its last.
  nlohmann::json* place(nlohmann::json v) {
    if (!started_) {
      started_ = true;
      root_ = std::move(v);
      return &root_;
    }
    nlohmann::json& parent = *open_.back();
    if (parent.is_object()) return &(parent[key_] = std::move(v));
    parent.push_back(std::move(v));
    return &parent.back();
  }

  nlohmann::json root_;
  std::vector<nlohmann::json*> open_;
  std::string key_;
  bool started_ = false;
};

// The top-level object's keys as values of their own, except the array under `arrayKey`, whose
// elements go to `onElement` one by one.
class StreamingSax : public nlohmann::json_sax<nlohmann::json> {
 public:
  StreamingSax(std::string arrayKey, const std::function<bool(const nlohmann::json&)>& onElement)
      : arrayKey_(std::move(arrayKey)), onElement_(onElement) {}

  nlohmann::json top = nlohmann::json::object();
  std::string error;
  bool tooDeep = false;

  bool null() override { return scalar(nullptr); }
  bool boolean(bool v) override { return scalar(v); }
  bool number_integer(number_integer_t v) override { return scalar(v); }
  bool number_unsigned(number_unsigned_t v) override { return scalar(v); }
  bool number_float(number_float_t v, const string_t& text) override {
    if (!std::isfinite(v)) return fail("the number " + clipped(text) + " is out of range");
    return scalar(v);
  }
  bool string(string_t& v) override { return scalar(std::move(v)); }
  bool binary(binary_t&) override { return fail("it holds binary data"); }
  bool start_object(std::size_t) override { return open(nlohmann::json::object()); }
  bool start_array(std::size_t) override {
    if (depth_ == 1 && key_ == arrayKey_ && !value_.building()) {  // the streamed array itself
      top[arrayKey_] = nlohmann::json::array();
      inArray_ = true;
      ++nesting_;
      ++depth_;
      return true;
    }
    return open(nlohmann::json::array());
  }
  bool key(string_t& k) override {
    if (depth_ == 1)
      key_ = k;
    else
      value_.key(k);
    return true;
  }
  bool end_object() override { return close(); }
  bool end_array() override {
    if (inArray_ && depth_ == 2 && !value_.building()) {
      inArray_ = false;
      --nesting_;
      --depth_;
      return true;
    }
    return close();
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    return fail(e.what());
  }

 private:
  bool fail(std::string why) {
    if (error.empty()) error = std::move(why);
    return false;
  }
  bool open(nlohmann::json container) {
    // nlohmann's parser keeps its own stack, so depth is refused here as it goes, not before.
    if (++nesting_ > kMaxJsonDepth) {
      tooDeep = error.empty();
      return fail("it is nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    }
    ++depth_;
    if (depth_ == 1) return container.is_object() ? true : fail("it is not a JSON object");
    value_.start(std::move(container));
    return true;
  }
  bool close() {
    --nesting_;
    --depth_;
    if (depth_ == 0) return true;  // the top-level object
    value_.end();
    return finishValue();
  }
  bool scalar(nlohmann::json v) {
    if (depth_ == 0) return fail("it is not a JSON object");
    value_.value(std::move(v));
    return finishValue();
  }
  // A whole value: an element of the array goes to the caller, any other is kept under its key.
  bool finishValue() {
    if (!value_.done()) return true;
    if (inArray_) return onElement_(value_.take());
    top[key_] = value_.take();
    return true;
  }

  std::string arrayKey_;
  const std::function<bool(const nlohmann::json&)>& onElement_;
  ValueBuilder value_;
  std::string key_;  // the top-level key whose value is being read
  int depth_ = 0;    // 1 inside the top-level object, 2 inside the streamed array
  int nesting_ = 0;  // containers open, the top-level object and the streamed array included
  bool inArray_ = false;
};

}  // namespace

namespace {

template <class Input>
UserJson parseStreaming(Input&& text, const std::string& arrayKey,
                        const std::function<bool(const nlohmann::json& element)>& onElement) {
  UserJson out;
  out.value = nlohmann::json(nlohmann::json::value_t::discarded);
  StreamingSax sax(arrayKey, onElement);
  if (!nlohmann::json::sax_parse(std::forward<Input>(text), &sax)) {
    out.error = sax.error;  // empty when the caller stopped the read: its own message says why
    out.tooDeep = sax.tooDeep;
    return out;
  }
  out.value = std::move(sax.top);
  return out;
}

}  // namespace

UserJson parseUserJsonStreaming(const std::string& text, const std::string& arrayKey,
                                const std::function<bool(const nlohmann::json& element)>& onElement) {
  return parseStreaming(text, arrayKey, onElement);
}

UserJson parseUserJsonStreaming(std::istream& text, const std::string& arrayKey,
                                const std::function<bool(const nlohmann::json& element)>& onElement) {
  return parseStreaming(text, arrayKey, onElement);
}

}  // namespace shardscope::files
