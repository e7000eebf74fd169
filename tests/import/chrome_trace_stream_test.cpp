// A Chrome trace read in chunks: every event comes back whole and in order, however the chunks
// cut it (events across a chunk's edge, one event larger than a chunk, quotes and brackets inside
// strings), members before and after traceEvents, gzipped alike; a damaged file is refused
// saying where.
#include "files/chrome_trace_stream.h"

#include <gtest/gtest.h>
#ifdef SHARDSCOPE_HAVE_ZLIB
#include <zlib.h>
#endif

#include <fstream>
#include <string>
#include <vector>

#include "tests/support/run_cli.h"

namespace shardscope::files {
namespace {

struct Seen {
  std::vector<std::string> names;
  std::vector<int64_t> ts;
  std::vector<size_t> indexes;
  std::vector<std::string> args;
  nlohmann::json members = nlohmann::json::object();
};

std::string read(const std::string& path, Seen& seen) {
  ChromeTraceHandlers handlers;
  handlers.onMember = [&](const std::string& key, const nlohmann::json& value) { seen.members[key] = value; };
  handlers.onEvent = [&](const ChromeEvent& event, size_t index) {
    seen.indexes.push_back(index);
    seen.names.emplace_back(event.name);
    seen.ts.push_back(static_cast<int64_t>(event.ts));
    seen.args.emplace_back(event.args);
    return std::string();
  };
  return streamChromeTrace(path, handlers).message;
}

std::string written(const std::string& name, const std::string& text) {
  const std::string path = testing::freshTempDir("chrome_stream") + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// Names that a byte scanner could mistake for the event's end: quotes, braces, backslashes.
std::string awkwardName(int i) {
  return "op \\\"}]{[\\\\ " + std::to_string(i) + std::string(static_cast<size_t>(i % 97), 'x');
}

std::string traceText(int events, const std::string& bigArg = "") {
  std::string text =
      "{\"schemaVersion\": 1, \"distributedInfo\": {\"rank\": 3, \"world_size\": 4},\n\"traceEvents\": [\n";
  for (int i = 0; i < events; ++i) {
    if (i > 0) text += ",\n  ";
    text += "{\"ph\": \"X\", \"name\": \"" + awkwardName(i) + "\", \"ts\": " + std::to_string(i) +
            ", \"args\": {\"a\": [1, {\"b\": \"}\"}]";
    if (i == events / 2 && !bigArg.empty()) text += ", \"big\": \"" + bigArg + "\"";
    text += "}}";
  }
  text += "\n], \"traceName\": \"t\", \"baseTimeNanoseconds\": 1700000000000000000}";
  return text;
}

void expectEveryEvent(const Seen& seen, int events) {
  ASSERT_EQ(seen.names.size(), static_cast<size_t>(events));
  for (int i = 0; i < events; ++i) {
    ASSERT_EQ(seen.indexes[static_cast<size_t>(i)], static_cast<size_t>(i + 1));
    ASSERT_EQ(seen.ts[static_cast<size_t>(i)], i);
    // The JSON escapes read back: \" is ", \\ is one backslash.
    std::string expected = awkwardName(i);
    std::string unescaped;
    for (size_t c = 0; c < expected.size(); ++c) {
      if (expected[c] == '\\') ++c;
      unescaped += expected[c];
    }
    ASSERT_EQ(seen.names[static_cast<size_t>(i)], unescaped) << "event " << i;
    ASSERT_EQ(seen.args[static_cast<size_t>(i)].rfind("{\"a\": [1, {\"b\": \"}\"}]", 0), 0u) << "event " << i;
  }
  EXPECT_EQ(seen.members["schemaVersion"], 1);
  EXPECT_EQ(seen.members["distributedInfo"]["rank"], 3);
  EXPECT_EQ(seen.members["baseTimeNanoseconds"], 1700000000000000000ULL);  // after the events
  EXPECT_EQ(seen.members["traceName"], "t");
}

TEST(ChromeTraceStream, EveryEventComesBackWholeAcrossChunks) {
  const int events = 80000;  // about 11 MiB: more than two chunks
  const std::string text = traceText(events);
  ASSERT_GT(text.size(), size_t{8} << 20);
  Seen seen;
  EXPECT_EQ(read(written("t.json", text), seen), "");
  expectEveryEvent(seen, events);
}

TEST(ChromeTraceStream, AnEventLargerThanAChunkIsReadWhole) {
  const std::string big(size_t{9} << 20, 'z');
  Seen seen;
  EXPECT_EQ(read(written("big.json", traceText(100, big)), seen), "");
  expectEveryEvent(seen, 100);
}

#ifdef SHARDSCOPE_HAVE_ZLIB
TEST(ChromeTraceStream, AGzippedTraceReadsTheSame) {
  const int events = 40000;
  const std::string text = traceText(events);
  const std::string path = testing::freshTempDir("chrome_stream_gz") + "/t.json.gz";
  gzFile out = gzopen(path.c_str(), "wb");
  ASSERT_NE(out, nullptr);
  ASSERT_EQ(gzwrite(out, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
  gzclose(out);
  Seen seen;
  EXPECT_EQ(read(path, seen), "");
  expectEveryEvent(seen, events);
}
#endif

TEST(ChromeTraceStream, DamagedTracesAreRefusedSayingWhere) {
  Seen seen;
  const std::string text = traceText(20000);
  EXPECT_EQ(read(written("cut.json", text.substr(0, text.size() * 2 / 3)), seen),
            "ends before its JSON does (a truncated file)");
  std::string broken = text;
  const size_t at = broken.find("\"ts\": 15000");
  broken.replace(at, 11, "\"ts\" 15000");  // no colon
  const std::string problem = read(written("broken.json", broken), seen);
  EXPECT_NE(problem.find("is not JSON at byte"), std::string::npos) << problem;
  EXPECT_NE(problem.find("in its event 15001"), std::string::npos) << problem;
  EXPECT_EQ(read(written("none.json", "{\"schemaVersion\": 1}"), seen), "has no traceEvents array");
  EXPECT_EQ(read(written("array.json", "[1, 2]"), seen), "is not JSON at byte 0 (a trace is one JSON object)");
  EXPECT_EQ(read(written("empty.json", ""), seen), "is empty");
  // A stray bracket where an event belongs is refused, not read as an empty value forever.
  EXPECT_EQ(read(written("stray.json", R"({"traceEvents": [{"name": "a", "ts": 1}, }]})"), seen),
            "is not JSON at byte 41 (a '}' where an event belongs)");
  EXPECT_EQ(read(written("stray_member.json", R"({"schemaVersion": }, "traceEvents": []})"), seen),
            "is not JSON at byte 18 (the value of \"schemaVersion\")");
  EXPECT_EQ(read("/nonexistent/t.json", seen), "does not exist: check the path");
}

// Each problem comes with its kind, which the readers act on (a file cut short or not JSON is worth
// recording again; a handler's refusal is not): never read back from the words.
TEST(ChromeTraceStream, EachProblemHasItsKind) {
  const std::string text = traceText(200);
  ChromeTraceHandlers handlers;
  const auto kindOf = [&](const std::string& name, const std::string& body) {
    return streamChromeTrace(written(name, body), handlers).kind;
  };
  EXPECT_EQ(kindOf("fine.json", text), TraceProblemKind::None);
  EXPECT_EQ(kindOf("cut.json", text.substr(0, text.size() / 2)), TraceProblemKind::Truncated);
  EXPECT_EQ(kindOf("array.json", "[1, 2]"), TraceProblemKind::NotJson);
  EXPECT_EQ(kindOf("empty.json", ""), TraceProblemKind::Empty);
  EXPECT_EQ(kindOf("none.json", "{\"schemaVersion\": 1}"), TraceProblemKind::NoTraceEvents);
  EXPECT_EQ(streamChromeTrace("/nonexistent/t.json", handlers).kind, TraceProblemKind::Unreadable);
  handlers.onEvent = [](const ChromeEvent&, size_t index) { return index == 3 ? std::string("is not ours") : ""; };
  const auto refused = streamChromeTrace(written("refused.json", text), handlers);
  EXPECT_EQ(refused.kind, TraceProblemKind::Refused);
  EXPECT_EQ(refused.message, "is not ours");
}

TEST(ChromeTraceStream, AHandlersReasonEndsTheReading) {
  ChromeTraceHandlers handlers;
  size_t calls = 0;
  handlers.onEvent = [&](const ChromeEvent&, size_t index) {
    ++calls;
    return index == 7 ? std::string("stop here") : std::string();
  };
  EXPECT_EQ(streamChromeTrace(written("t.json", traceText(50)), handlers).message, "stop here");
  EXPECT_EQ(calls, 7u);
}

}  // namespace
}  // namespace shardscope::files

namespace shardscope::files {
namespace {

TEST(ChromeTraceStream, ArgsIntegersAreReadWhicheverWayWritten) {
  ChromeArgs args;
  std::vector<int64_t> values;
  std::vector<bool> found;
  EXPECT_EQ(args.integers(R"({"Bytes": -512, "Addr": 140000000000000, "x": "y", "Total Allocated": 1.0e3})",
                          {"Bytes", "Addr", "Total Allocated", "Device Id"}, values, found),
            "");
  EXPECT_EQ(values, (std::vector<int64_t>{-512, 140000000000000, 1000, 0}));
  EXPECT_EQ(found, (std::vector<bool>{true, true, true, false}));
  EXPECT_EQ(args.integers(R"({"Bytes": "512"})", {"Bytes"}, values, found),
            "\"args.Bytes\" is a string where a number belongs");
}

}  // namespace
}  // namespace shardscope::files
