// The Export tab's action (what its Trace JSON and Memory CSV buttons call): one file per session,
// named after the strategy for a compare, readable by Perfetto's JSON loader and a CSV reader, and
// a message that names a path it could not write.
#include "ui/export_files.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/support/run_cli.h"
#include "ui/synthetic_recording.h"
#include "tests/support/mode_of.h"

namespace shardscope::ui {
namespace {

Session sessionOf(const std::string& strategy) {
  Session s;
  s.config.strategy = testing::modeOf<config::StrategyKind>(strategy);
  s.title = strategy;
  s.recording = syntheticRecording(2, 2000, 4);
  return s;
}

TEST(ExportFiles, CompareWritesOneTracePerStrategy) {
  const std::string base = testing::freshTempDir("export_compare") + "/run";
  std::vector<Session> sessions;
  for (const char* s : {"ddp", "full_shard", "shard_grad_op"}) sessions.push_back(sessionOf(s));
  const std::string message = exportSessions(sessions, base, ExportFormat::TraceJson);
  for (const char* s : {"ddp", "full_shard", "shard_grad_op"}) {
    const std::string path = base + "." + s + ".json";
    EXPECT_NE(message.find("wrote " + path), std::string::npos) << message;
    auto json = nlohmann::json::parse(testing::fileContents(path));
    EXPECT_GT(json["traceEvents"].size(), 100u) << path;
    EXPECT_NE(json.dump().find(s), std::string::npos) << "the run's configuration rides along";
  }
}

TEST(ExportFiles, OneSessionWritesTheMemoryCsvAtTheBaseName) {
  const std::string base = testing::freshTempDir("export_csv") + "/run";
  const auto message = exportSessions({sessionOf("full_shard")}, base, ExportFormat::MemoryCsv);
  EXPECT_EQ(message, "wrote " + base + ".csv\n");
  std::istringstream csv(testing::fileContents(base + ".csv"));
  std::string header, line;
  std::getline(csv, header);
  EXPECT_EQ(header.rfind("rank,t_ns,param_shard,param_gathered", 0), 0u) << header;
  int rows = 0;
  while (std::getline(csv, line)) ++rows;
  EXPECT_GT(rows, 100);
}

TEST(ExportFiles, UnwritablePathIsNamedWithWhatToDo) {
  const auto message = exportSessions({sessionOf("ddp")}, "/nonexistent-dir/run", ExportFormat::TraceJson);
  EXPECT_NE(message.find("cannot write '/nonexistent-dir/run.json'"), std::string::npos) << message;
  EXPECT_NE(message.find("writable directory"), std::string::npos) << message;
}

TEST(ExportFiles, SessionOpenedFromASummaryHasNoTimelineToWrite) {
  const std::string base = testing::freshTempDir("export_summary") + "/run";
  Session fromSummary = sessionOf("ddp");
  fromSummary.fromSummary = true;
  fromSummary.recording = trace::RunRecording(2);
  const auto message = exportSessions({fromSummary}, base, ExportFormat::TraceJson);
  EXPECT_NE(message.find("nothing to write for ddp"), std::string::npos) << message;
  EXPECT_FALSE(std::ifstream(base + ".json").good());
}

TEST(ExportFiles, NoSessionsSaysWhatToDoFirst) {
  const std::string base = testing::freshTempDir("export_none") + "/run";
  const auto message = exportSessions({}, base, ExportFormat::MemoryCsv);
  EXPECT_NE(message.find("press Run or Compare"), std::string::npos) << message;
  EXPECT_FALSE(std::ifstream(base + ".csv").good());
}

}  // namespace
}  // namespace shardscope::ui
