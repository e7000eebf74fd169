// JSON from users' files: deep nesting is refused before parsing (it crashed `run --config` and
// `view` with a stack overflow), brackets inside strings do not count, and everything else parses
// as nlohmann does.
#include <gtest/gtest.h>

#include "files/user_json.h"

#include <vector>

namespace shardscope::files {
namespace {

std::string nested(int depth, const char* open, const char* close, const std::string& inner = "1") {
  std::string text;
  for (int i = 0; i < depth; ++i) text += open;
  text += inner;
  for (int i = 0; i < depth; ++i) text += close;
  return text;
}

TEST(UserJson, NestingPastTheLimitIsRefusedWithoutRecursion) {
  const auto deep = parseUserJson("{\"model\": " + nested(100000, "[", "]") + "}");
  EXPECT_TRUE(deep.value.is_discarded());
  EXPECT_EQ(deep.error, "it is nested deeper than 64 levels");
  EXPECT_TRUE(deep.tooDeep) << "a kind the readers act on, not the words";
  EXPECT_FALSE(parseUserJson("{\"a\": ").tooDeep) << "cut short is not too deep";
  EXPECT_TRUE(parseUserJson(nested(kMaxJsonDepth + 1, "{\"a\":", "}")).value.is_discarded());
  const auto atLimit = parseUserJson(nested(kMaxJsonDepth, "[", "]"));
  EXPECT_TRUE(atLimit.error.empty()) << atLimit.error;
  EXPECT_TRUE(atLimit.value.is_array());
}

TEST(UserJson, BracketsInStringsDoNotCount) {
  const auto parsed = parseUserJson(R"({"label": ")" + std::string(200, '[') + R"(\"[[[", "n": [1]})");
  ASSERT_TRUE(parsed.error.empty()) << parsed.error;
  EXPECT_EQ(parsed.value["n"][0], 1);
}

TEST(UserJson, SyntaxErrorsAndHugeNumbersAreMessagesNotExceptions) {
  EXPECT_NE(parseUserJson("{\"a\": ").error.find("parse error"), std::string::npos);
  EXPECT_NE(parseUserJson("{\"lr\": -1e400}").error.find("number overflow"), std::string::npos);
  EXPECT_TRUE(parseUserJson("// a comment\n{\"a\": 1}", /*allowComments=*/true).error.empty());
  EXPECT_FALSE(parseUserJson("// a comment\n{\"a\": 1}").error.empty());
}

// A trace too large to hold as one tree: its events come one at a time, each whole, in order, and
// the other keys are kept; the document as parsed whole is the same JSON.
TEST(UserJson, AStreamedArraysElementsComeOneAtATimeAndTheRestIsKept) {
  const std::string text = R"({"displayTimeUnit": "ms", "otherData": {"model": "gpt", "n": [1, {"x": null}]},
      "traceEvents": [{"ph": "M", "args": {"name": "rank 0"}}, 7, [1, [2]], {"ph": "X", "ts": 1.5e3}],
      "after": true})";
  std::vector<nlohmann::json> elements;
  const auto streamed = parseUserJsonStreaming(text, "traceEvents", [&](const nlohmann::json& e) {
    elements.push_back(e);
    return true;
  });
  ASSERT_TRUE(streamed.error.empty()) << streamed.error;
  const auto whole = parseUserJson(text).value;
  ASSERT_EQ(elements.size(), whole["traceEvents"].size());
  for (size_t i = 0; i < elements.size(); ++i) EXPECT_EQ(elements[i], whole["traceEvents"][i]) << i;
  EXPECT_EQ(streamed.value["otherData"], whole["otherData"]);
  EXPECT_EQ(streamed.value["after"], true);
  EXPECT_EQ(streamed.value["traceEvents"], nlohmann::json::array()) << "present, its elements handed over";
}

TEST(UserJson, AStreamedReadStopsWhereTheCallerOrTheTextSays) {
  int seen = 0;
  const auto stopped =
      parseUserJsonStreaming(R"({"e": [1, 2, 3, 4]})", "e", [&](const nlohmann::json&) { return ++seen < 2; });
  EXPECT_EQ(seen, 2);
  EXPECT_TRUE(stopped.value.is_discarded());
  const auto keep = [](const nlohmann::json&) { return true; };
  EXPECT_NE(parseUserJsonStreaming(R"({"e": [{"ts": -1e400}]})", "e", keep).error.find("number overflow"),
            std::string::npos);
  EXPECT_NE(parseUserJsonStreaming(R"({"e": [1, )", "e", keep).error.find("parse error"), std::string::npos);
  EXPECT_EQ(parseUserJsonStreaming("[1, 2]", "e", keep).error, "it is not a JSON object");
  const auto deep = parseUserJsonStreaming("{\"e\": " + nested(100000, "[", "]") + "}", "e", keep);
  EXPECT_EQ(deep.error, "it is nested deeper than 64 levels");
  EXPECT_TRUE(deep.tooDeep);
  EXPECT_FALSE(parseUserJsonStreaming(R"({"e": [1, )", "e", keep).tooDeep);
  const auto notArray = parseUserJsonStreaming(R"({"e": {"a": 1}})", "e", keep);
  ASSERT_TRUE(notArray.error.empty()) << notArray.error;
  EXPECT_TRUE(notArray.value["e"].is_object()) << "kept as it was, for the caller to refuse";
}

}  // namespace
}  // namespace shardscope::files
