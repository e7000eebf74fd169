// The app really renders: under Xvfb, `shardscope view TRACE --screenshot` and
// `shardscope run ... --screenshot` write a PNG that shows the window — not blank, the sidebar,
// the memory lanes in the role colours and the collective blocks where they belong.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <chrono>
#include <set>
#include <thread>

#include <stb_image.h>

#include "tests/support/run_cli.h"

namespace shardscope {
namespace {

struct Image {
  int width = 0, height = 0;
  std::vector<unsigned char> rgba;
  const unsigned char* at(int x, int y) const { return &rgba[(static_cast<size_t>(y) * width + x) * 4]; }
};

Image load(const std::string& path) {
  Image img;
  int channels = 0;
  unsigned char* data = stbi_load(path.c_str(), &img.width, &img.height, &channels, 4);
  if (data) {
    img.rgba.assign(data, data + static_cast<size_t>(img.width) * img.height * 4);
    stbi_image_free(data);
  }
  return img;
}

// Pixels within a small distance of an RGB colour, inside [x0, x1) x [y0, y1).
// Pixels within `tolerance` (the sum of the channels' differences) of a colour. Text is drawn in an
// antialiased TrueType font, so only a glyph's stems reach its full colour: text checks use a wider
// tolerance than filled areas.
int countColor(const Image& img, int r, int g, int b, int x0, int y0, int x1, int y1, int tolerance = 12) {
  int n = 0;
  for (int y = y0; y < y1; ++y) {
    for (int x = x0; x < x1; ++x) {
      const auto* p = img.at(x, y);
      if (std::abs(p[0] - r) + std::abs(p[1] - g) + std::abs(p[2] - b) < tolerance) ++n;
    }
  }
  return n;
}

bool haveXvfb() { return std::system("command -v xvfb-run >/dev/null 2>&1") == 0; }

// shardscope with `args` on a virtual display of `screen` (WIDTHxHEIGHT). The X authority file is
// the test's own: left to make one, xvfb-run removes its temporary folder after the program and,
// when that fails (once in a full ctest), exits 5 in place of the program's status.
testing::CliResult underXvfb(const std::vector<std::string>& args, int timeoutSeconds,
                             const std::string& screen = "1600x1000") {
  const std::string authority = testing::freshTempDir("xvfb") + "/Xauthority";
  std::ofstream(authority).flush();
  std::vector<std::string> argv = {"xvfb-run",       "-a", "-f", authority, "-s", "-screen 0 " + screen + "x24",
                                   SHARDSCOPE_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::runCommand(argv, {}, timeoutSeconds);
}

void expectShowsTheApp(const Image& img) {
  ASSERT_EQ(img.width, 1600);
  ASSERT_EQ(img.height, 1000);
  // Not blank: many distinct colours.
  std::set<uint32_t> colors;
  for (size_t i = 0; i < img.rgba.size(); i += 4 * 7) {
    colors.insert((img.rgba[i] << 16) | (img.rgba[i + 1] << 8) | img.rgba[i + 2]);
  }
  EXPECT_GT(colors.size(), 100u);
  // The sidebar (left 300 px) and the timeline area (right of it) are both drawn on.
  const int sidebarText =
      countColor(img, 230, 230, 235, 0, 0, 300, 1000) + countColor(img, 255, 255, 255, 0, 0, 300, 1000);
  EXPECT_GT(sidebarText + static_cast<int>(colors.size()), 100);
  // Memory lanes in the role colours, in the upper (timeline) part right of the sidebar.
  EXPECT_GT(countColor(img, 76, 120, 168, 320, 0, 1600, 650), 200) << "param_shard (blue)";
  EXPECT_GT(countColor(img, 178, 121, 162, 320, 0, 1600, 650), 200) << "optimizer_state (purple)";
  // all-gather (orange) and reduce-scatter (green) blocks of full_shard.
  EXPECT_GT(countColor(img, 245, 133, 24, 320, 0, 1600, 650), 200) << "all-gather blocks";
  EXPECT_GT(countColor(img, 84, 162, 75, 320, 0, 1600, 650), 200) << "reduce-scatter blocks";
}

TEST(Screenshot, ViewOfASavedTraceShowsTheApp) {
  if (!haveXvfb()) GTEST_SKIP() << "xvfb-run is not installed";
  const auto dir = testing::freshTempDir("screenshot_view");
  auto run = testing::runShardscope({"run", "--model", "gpt", "--layers", "3", "--hidden", "96", "--seq", "16",
                                     "--batch", "4", "--world", "2", "--steps", "3", "--strategy", "full_shard",
                                     "--trace", dir + "/trace.json"});
  ASSERT_EQ(run.exitCode, 0) << run.output;
  auto view = underXvfb({"view", dir + "/trace.json", "--screenshot", dir + "/view.png"}, 120);
  ASSERT_EQ(view.exitCode, 0) << view.output;
  expectShowsTheApp(load(dir + "/view.png"));
}

// A screenshot that cannot be written (a full device) fails the command, naming the reason: stb's
// writer ignored the failed write, and view exited 0 with no picture.
TEST(Screenshot, AScreenshotThatCannotBeWrittenFailsTheCommand) {
  if (!haveXvfb()) GTEST_SKIP() << "xvfb-run is not installed";
  const auto dir = testing::freshTempDir("screenshot_full");
  auto run = testing::runShardscope(
      {"run", "--steps", "1", "--hidden", "8", "--layers", "1", "--trace", dir + "/trace.pftrace"});
  ASSERT_EQ(run.exitCode, 0) << run.output;
  auto view = underXvfb({"view", dir + "/trace.pftrace", "--screenshot", "/dev/full"}, 120);
  EXPECT_EQ(view.exitCode, 1) << view.output;
  EXPECT_NE(view.output.find("cannot write '/dev/full': No space left on device"), std::string::npos) << view.output;
}

// Listen mode: a job launched without shardscope (torchrun's variables, set here) streams to
// `listen --screenshot`, whose window draws it live; the picture, once the ranks are done, is the
// app's, with the job's memory lanes and collectives.
TEST(Screenshot, ListenModeDrawsALaunchedJob) {
  if (!haveXvfb()) GTEST_SKIP() << "xvfb-run is not installed";
  const auto dir = testing::freshTempDir("screenshot_listen");
  const std::string port = std::to_string(testing::freeLoopbackPort());
  testing::CliResult listen;
  std::thread collector([&] {
    listen = underXvfb({"listen", "--port", port, "--trace-dir", dir + "/job", "--screenshot", dir + "/live.png"}, 180);
  });
  config::RunConfig config = testing::tinyGptConfig();  // 2 ranks, 3 blocks, made wider for the picture
  config.hidden = 96;
  config.seq = 16;
  config.steps = 3;
  config.strategy = config::StrategyKind::FullShard;
  ASSERT_TRUE(testing::waitForLoopbackListener(std::stoi(port), 60)) << "the collector (after Xvfb) never listened";
  const auto ranks = testing::runWorkerJob(config, {"--collector", "127.0.0.1:" + port});
  collector.join();
  for (const auto& r : ranks) EXPECT_EQ(r.exitCode, 0) << r.output;
  ASSERT_EQ(listen.exitCode, 0) << listen.output;
  EXPECT_NE(listen.output.find("rank 1 finished (3 steps)"), std::string::npos) << listen.output;
  expectShowsTheApp(load(dir + "/live.png"));
}

// A slide of one moment: the holdings tab at an event group, at projector resolution.
TEST(Screenshot, ViewAtAnEventGroupShowsWhoHoldsWhat) {
  if (!haveXvfb()) GTEST_SKIP() << "xvfb-run is not installed";
  const auto dir = testing::freshTempDir("screenshot_holdings");
  auto run = testing::runShardscope(
      {"run",   "--model",    "gpt",        "--layers",   "3",       "--hidden", "96",
       "--seq", "16",         "--batch",    "4",          "--world", "2",        "--steps",
       "2",     "--strategy", "full_shard", "--prefetch", "0",       "--trace",  dir + "/trace.json"});
  ASSERT_EQ(run.exitCode, 0) << run.output;
  const std::vector<std::string> viewArgs = {"view",     dir + "/trace.json", "--tab",
                                             "holdings", "--window-size",     "1920x1080"};
  auto args = viewArgs;
  args.insert(args.end(), {"--at", "forward blocks.1@1", "--screenshot", dir + "/holdings.png"});
  auto view = underXvfb(args, 120, "1920x1080");
  ASSERT_EQ(view.exitCode, 0) << view.output;
  const Image img = load(dir + "/holdings.png");
  ASSERT_EQ(img.width, 1920);
  ASSERT_EQ(img.height, 1080);
  // The grid, below the timelines: every rank's shards (blue), optimizer state (purple), and the
  // gathered weights (orange) of the unit the playhead is at.
  EXPECT_GT(countColor(img, 76, 120, 168, 320, 760, 1920, 1080), 200) << "param_shard cells";
  EXPECT_GT(countColor(img, 178, 121, 162, 320, 760, 1920, 1080), 200) << "optimizer_state cells";
  EXPECT_GT(countColor(img, 245, 133, 24, 320, 760, 1920, 1080), 200) << "gathered weights";

  args = viewArgs;
  args.insert(args.end(), {"--at", "forward blocks.9", "--screenshot", dir + "/none.png"});
  auto bad = underXvfb(args, 120, "1920x1080");
  EXPECT_EQ(bad.exitCode, 2) << bad.output;
  EXPECT_NE(bad.output.find("--at 'forward blocks.9' is neither a time"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("'forward blocks.1'"), std::string::npos) << "names the run's groups:\n" << bad.output;
}

TEST(Screenshot, LiveRunShowsTheApp) {
  if (!haveXvfb()) GTEST_SKIP() << "xvfb-run is not installed";
  const auto dir = testing::freshTempDir("screenshot_run");
  auto run = underXvfb({"run", "--model", "gpt", "--layers", "3", "--hidden", "96", "--seq", "16", "--batch", "4",
                        "--world", "2", "--steps", "3", "--strategy", "full_shard", "--screenshot", dir + "/run.png"},
                       180);
  ASSERT_EQ(run.exitCode, 0) << run.output;
  expectShowsTheApp(load(dir + "/run.png"));
}

TEST(Screenshot, SavedCompareSummaryOpensWithItsFigures) {
  if (!haveXvfb()) GTEST_SKIP() << "xvfb-run is not installed";
  const auto dir = testing::freshTempDir("screenshot_summary");
  auto compare = testing::runShardscope({"compare", "--model", "mlp", "--layers", "2", "--world", "2", "--steps", "2",
                                         "--summary", dir + "/compare.json"});
  ASSERT_EQ(compare.exitCode, 0) << compare.output;
  auto view = underXvfb({"view", dir + "/compare.json", "--screenshot", dir + "/summary.png"}, 120);
  ASSERT_EQ(view.exitCode, 0) << view.output;
  const Image img = load(dir + "/summary.png");
  ASSERT_EQ(img.width, 1600);
  // With no timelines, the table and bar charts fill the window below the session headers: the
  // peak-memory bars in the role colours and the traffic bars in the all-gather orange.
  EXPECT_GT(countColor(img, 76, 120, 168, 320, 400, 1600, 1000), 50) << "param_shard bars";
  EXPECT_GT(countColor(img, 245, 133, 24, 320, 400, 1600, 1000), 200) << "bytes-per-step bars";
}

// The Estimate tab after a compare of all four strategies: the predictions are labelled, every
// predicted figure is marked as measured exactly ("= run", green) and none differs (orange), and
// the what-if bars are drawn against the GPU's memory line. At 1920 px the two sit side by side
// (narrower, the what-if goes under the table: AppClicks.EstimateFiguresStayInsideTheirColumns).
TEST(Screenshot, EstimateTabPutsMeasurementsNextToPredictions) {
  if (!haveXvfb()) GTEST_SKIP() << "xvfb-run is not installed";
  const auto dir = testing::freshTempDir("screenshot_estimate");
  auto compare = underXvfb(
      {"compare", "--strategies", "ddp,zero1,shard_grad_op,full_shard", "--model", "mlp", "--layers", "2", "--world",
       "2", "--steps", "2", "--tab", "estimate", "--window-size", "1920x1080", "--screenshot", dir + "/estimate.png"},
      240);
  ASSERT_EQ(compare.exitCode, 0) << compare.output;
  const Image img = load(dir + "/estimate.png");
  ASSERT_EQ(img.width, 1920);
  // The tab takes the lower half; its left part is this run's prediction, its right the what-if.
  constexpr int kText = 45;
  EXPECT_GT(countColor(img, 255, 199, 89, 320, 560, 1920, 1080, kText), 40) << "PREDICTION labels";
  // The left table ends short of x = 1160, where the what-if's orange "does NOT fit" begins.
  EXPECT_GT(countColor(img, 128, 217, 128, 320, 560, 1150, 1080, kText), 60) << "\"= run\" marks";
  EXPECT_EQ(countColor(img, 255, 140, 102, 320, 560, 1150, 1080, kText), 0) << "a figure differs from its prediction";
  EXPECT_GT(countColor(img, 178, 121, 162, 1170, 560, 1920, 1080), 200) << "optimizer-state bars";
  EXPECT_GT(countColor(img, 255, 80, 80, 1170, 560, 1920, 1080), 20) << "the GPU memory line";
}

TEST(Screenshot, UnreadableTraceIsAClearError) {
  auto r = testing::runShardscope({"view", "/nonexistent/trace.json", "--screenshot", "/tmp/x.png"});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.output.find("'/nonexistent/trace.json' does not exist: name a trace (run --trace), a summary"),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace shardscope
