#include "app/engine_control.h"

#include "app/reading_notice.h"

#include <algorithm>

#include "app/engine_module.h"
#include "app/live_job.h"
#include "engine/recording/event_collector.h"
#include "engine/launch/run_types.h"
#include "estimate/memory_preflight.h"
#include "trace/rank_placements.h"
#include "ui/record_files.h"

namespace shardscope::app {

EngineSessionControl::EngineSessionControl(ui::SessionStore& store, std::string workerExecutable, size_t detailEvents)
    : store_(store), workerExecutable_(std::move(workerExecutable)), sessionDetailEvents_(detailEvents) {}

EngineSessionControl::~EngineSessionControl() {
  stopRequested_.store(true);
  if (worker_.joinable()) worker_.join();
}

std::string EngineSessionControl::checkConfig(const config::RunConfig& config) const {
  if (auto problem = checkDeviceAvailable(config)) return *problem;
  const auto now = std::chrono::steady_clock::now();
  std::string key = config.toJson().dump();
  if (key != checkedConfig_ || now - checkedAt_ > std::chrono::seconds(1)) {
    memoryProblem_ = estimate::checkMemoryAvailable(config);
    checkedConfig_ = std::move(key);
    checkedAt_ = now;
  }
  return memoryProblem_.value_or("");
}

void EngineSessionControl::startRun(const config::RunConfig& config) { launch({config}); }

void EngineSessionControl::startCompare(const std::vector<config::RunConfig>& runs) { launch(runs); }

void EngineSessionControl::startTitled(const std::vector<config::RunConfig>& runs,
                                       const std::vector<std::string>& titles) {
  launch(runs, titles);
}

void EngineSessionControl::stop() { stopRequested_.store(true); }

void EngineSessionControl::stepGate() { gateSteps_.fetch_add(1); }

void EngineSessionControl::continueGate() { gateContinue_.store(true); }

bool EngineSessionControl::beginLaunch() {
  if (busy_.exchange(true)) return false;
  if (worker_.joinable()) worker_.join();
  stopRequested_.store(false);
  gateSteps_.store(0);
  gateContinue_.store(false);
  auto lock = store_.lock();
  store_.clear();
  return true;
}

std::string EngineSessionControl::startListen(int port, const std::string& dir) {
  engine::CollectorOptions options;
  options.port = port;
  options.dir = dir;
  if (port < 1 || port > 65535) return "port " + std::to_string(port) + " is not a port: give one from 1 to 65535";
  if (auto problem = engine::checkCollectorOptions(options)) return *problem;
  if (!beginLaunch()) return "a run or a listen is under way: Stop it first";
  auto sink = std::make_shared<LiveJobSink>(store_, "127.0.0.1:" + std::to_string(port), sessionDetailEvents_, dir);
  worker_ = std::thread([this, options, sink] {
    const int exit = engine::runCollector(
        options, [this] { return stopRequested_.load(); }, sink.get());
    sink->finish(exit);
    busy_.store(false);
  });
  return "";
}

std::string EngineSessionControl::openRecord(const std::vector<std::string>& paths, bool beside) {
  if (paths.empty()) return "nothing to open: type a path, or pick one in the listing";
  if (busy_.exchange(true)) {
    std::lock_guard<std::mutex> lock(openMutex_);
    return openStatus_.reading ? "a recording is being read: wait for it"
                               : "a run or a listen is under way: Stop it first";
  }
  if (worker_.joinable()) worker_.join();
  {
    std::lock_guard<std::mutex> lock(openMutex_);
    openStatus_.reading = true;
    openStatus_.what = paths.front() + (paths.size() > 1 ? " and " + std::to_string(paths.size() - 1) + " more" : "");
    openStatus_.beside = beside;
    readProgress_ = std::make_unique<files::ReadProgress>(paths);
  }
  worker_ = std::thread([this, paths, beside] {
    ui::OpenedRecord record = ui::openRecord(paths, sessionDetailEvents_);
    if (record.error.empty()) {  // else what is shown stays
      auto lock = store_.lock();
      if (!beside) store_.clear();
      for (auto& s : record.sessions) store_.add(std::move(s));
    }
    {
      std::lock_guard<std::mutex> lock(openMutex_);
      openStatus_.reading = false;
      ++openStatus_.finished;
      openStatus_.error = record.error;
      openStatus_.notes = record.notes;
      openStatus_.ownConfig = record.ownConfig;
      openStatus_.config = record.config;
    }
    busy_.store(false);
  });
  return "";
}

ui::OpenStatus EngineSessionControl::openStatus() const {
  std::lock_guard<std::mutex> lock(openMutex_);
  ui::OpenStatus status = openStatus_;
  if (status.reading && readProgress_) status.progress = describeReading(*readProgress_);
  return status;
}

void EngineSessionControl::launch(std::vector<config::RunConfig> runs, std::vector<std::string> titles) {
  if (!beginLaunch()) return;
  std::vector<int> indices;
  {
    auto lock = store_.lock();
    for (size_t i = 0; i < runs.size(); ++i) {
      const config::RunConfig& c = runs[i];
      ui::Session s;
      s.title = i < titles.size() ? titles[i] : config::strategyTitle(c.strategy);
      // A comparison across world sizes names each session's.
      if (i >= titles.size() &&
          std::any_of(runs.begin(), runs.end(), [&](const config::RunConfig& o) { return o.world != c.world; })) {
        s.title += ", world " + std::to_string(c.world);
      }
      s.config = c;
      s.recording.reset(c.world);
      s.gate.gated = c.stepGate != config::StepGateMode::Off;
      s.gate.ranks = c.world;
      indices.push_back(store_.add(std::move(s)));
    }
  }
  worker_ = std::thread([this, runs, indices] {
    // The window's budget shared by its sessions: a compare of four long runs holds what one would.
    const size_t sessionEvents = sessionDetailEvents_ / std::max<size_t>(runs.size(), 1);
    for (size_t i = 0; i < runs.size() && !stopRequested_.load(); ++i) runOne(runs[i], indices[i], sessionEvents);
    busy_.store(false);
  });
}

void EngineSessionControl::runOne(const config::RunConfig& config, int index, size_t detailEvents) {
  std::vector<std::string> placements(static_cast<size_t>(config.world));  // each rank's, as reported
  engine::RunCallbacks callbacks;
  callbacks.onEvent = [&](const trace::Event& e) {
    if (e.kind == trace::EventKind::RunInfo && e.rank >= 0 && e.rank < config.world) {
      placements[e.rank] = e.text;
      auto lock = store_.lock();
      auto& s = store_.sessions()[index];
      s.device = trace::describeRankPlacements(placements);
      if (e.rank == 0) {
        s.parameterCount = e.parameterCount;
        s.deviceFacts = stats::deviceFactsOf(e);
      }
      s.status = ui::SessionStatus::Running;
    }
  };
  callbacks.onStep = [&](int, double loss, double) {
    auto lock = store_.lock();
    store_.sessions()[index].losses.push_back(loss);
  };
  callbacks.shouldStop = [this] { return stopRequested_.load(); };
  if (config.stepGate != config::StepGateMode::Off) {
    callbacks.onGate = [&](const engine::GateStatus& status) {
      auto lock = store_.lock();
      auto& gate = store_.sessions()[index].gate;
      gate.gated = !status.released;
      gate.waiting = status.waiting;
      gate.ranks = status.ranks;
      gate.next = status.next;
      gate.step = status.step;
      store_.touch();
    };
    // One Step releases one event group; a compare's later runs start gated again. Only this
    // (the controller's) thread takes Steps; the window only adds them.
    callbacks.gateCommand = [this] {
      if (gateContinue_.load()) return engine::GateCommand::Continue;
      if (gateSteps_.load() == 0) return engine::GateCommand::None;
      gateSteps_.fetch_sub(1);
      return engine::GateCommand::Step;
    };
  }
  // The run's events go straight into its session: the app holds each run once.
  engine::RecordingSink sink;
  sink.withRecording = [this, index](const std::function<void(trace::RunRecording&)>& use) {
    auto lock = store_.lock();
    use(store_.sessions()[index].recording);
    store_.touch();
  };
  sink.maxDetailEventsPerRank = detailEvents / static_cast<size_t>(std::max(config.world, 1));
  engine::RunResult result;
  try {
    result = runTraining(config, workerExecutable_, callbacks, sink);
  } catch (const std::exception& ex) {
    result.ok = false;
    result.error = ex.what();
  }
  auto lock = store_.lock();
  auto& s = store_.sessions()[index];
  s.gate.gated = false;
  gateContinue_.store(false);
  gateSteps_.store(0);
  // An output that could not be written fails the session as it fails a headless run (exit 1).
  s.status = result.ok && result.outputErrors.empty() ? ui::SessionStatus::Done : ui::SessionStatus::Failed;
  if (!result.ok) s.error = result.error;
  s.collectiveLogs = result.lastCollectives;  // a stalled or failed run's: the Last collectives tab
  for (const auto& e : result.outputErrors) s.error += (s.error.empty() ? "" : "\n") + e;
  if (!result.deviceDescription.empty()) s.device = result.deviceDescription;
  store_.touch();
}

}  // namespace shardscope::app
