// JSON from users' files: deep nesting is refused before parsing (it crashed `run --config` and
// `view` with a stack overflow), brackets inside strings do not count, and everything else parses
// as nlohmann does.
#include <gtest/gtest.h>

#include "files/user_json.h"

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

}  // namespace
}  // namespace shardscope::files
