// Flight Recorder dumps in the app, as `shardscope view DIR` opens them: the Last collectives tab
// names the first mismatch and marks the odd rank's cell; with no mismatch, neither is drawn.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "tests/support/run_cli.h"
#include "tests/ui/app_driver.h"
#include "recordings/readers.h"
#include "ui/record_files.h"

namespace shardscope::ui {
namespace {

const std::string kDumps = std::string(SHARDSCOPE_TEST_DATA) + "/flight_recorder_gloo";

// The dumps opened as a view-only window does, on the Last collectives tab, drawn twice.
struct ViewedDumps {
  explicit ViewedDumps(const std::string& dir) {
    auto record = openRecord({dir});
    EXPECT_EQ(record.error, "");
    {
      auto lock = store.lock();
      for (auto& s : record.sessions) store.add(std::move(s));
    }
    state.openTab = bottomTabTitle("collectives");
    app = AppDriver::viewOnly(store, state);
  }
  SessionStore store;
  AppState state;
  std::unique_ptr<AppDriver> app;
};

TEST(CollectivesView, TheFirstMismatchIsNamedAndTheOddCellMarked) {
  for (const char* job : {"skip_json", "reorder_pickle"}) {
    ViewedDumps viewed(kDumps + "/" + job);
    EXPECT_EQ(recordings::describePath(kDumps + "/" + job), "Flight Recorder dumps");
    ASSERT_EQ(viewed.store.sessions().size(), 1u);
    EXPECT_EQ(viewed.store.sessions()[0].collectiveLogs->ranks.size(), 3u);
    EXPECT_TRUE(viewed.app->items().count("tab:Last collectives")) << job;
    EXPECT_TRUE(viewed.app->items().count("collectives:first-mismatch")) << job;
    EXPECT_TRUE(viewed.app->items().count("collectives:odd-cell")) << job;
  }
}

TEST(CollectivesView, RanksThatAgreeShowNoMismatch) {
  // Ranks 0 and 2 of the skip job alone: both entered #6 alike.
  const auto dir = testing::freshTempDir("collectives_view_agree");
  for (const char* name : {"fr-0", "fr-2"}) std::filesystem::copy_file(kDumps + "/skip_json/" + name, dir + "/" + name);
  ViewedDumps viewed(dir);
  ASSERT_EQ(viewed.store.sessions().size(), 1u);
  EXPECT_FALSE(viewed.app->items().count("collectives:first-mismatch"));
  EXPECT_FALSE(viewed.app->items().count("collectives:odd-cell"));
}

}  // namespace
}  // namespace shardscope::ui
