#include "app/live_job.h"

#include <nlohmann/json.hpp>

#include "trace/rank_event_files.h"
#include "trace/rank_placements.h"

namespace shardscope::app {

namespace {

// As the controller's merge window: events a rank's threads recorded slightly out of order.
constexpr int64_t kReorderWindowNs = 50'000'000;

}  // namespace

LiveJobSink::LiveJobSink(ui::SessionStore& store, const std::string& listeningOn, size_t detailEvents,
                         const std::string& keptIn)
    : store_(store), listeningOn_(listeningOn), detailEvents_(detailEvents) {
  ui::Session s;
  s.everyStepIn = keptIn;
  s.title = "waiting for ranks on " + listeningOn;
  s.status = ui::SessionStatus::Starting;
  auto lock = store_.lock();
  session_ = store_.add(std::move(s));
}

LiveJobSink::Rank& LiveJobSink::rankState(int rank) {
  if (static_cast<size_t>(rank) >= ranks_.size()) ranks_.resize(static_cast<size_t>(rank) + 1);
  Rank& r = ranks_[static_cast<size_t>(rank)];
  if (!r.order) {
    // One merger per rank, which sees it as its rank 0: it orders the rank's own stream only.
    r.order = std::make_unique<trace::StreamMerger>(1, kReorderWindowNs, [this, rank](const trace::Event& e) {
      released_.push_back(e);
      released_.back().rank = rank;
    });
  }
  return r;
}

void LiveJobSink::rankJoined(int rank, int world, const std::string& configJson, const std::string& peer) {
  rankState(rank);
  auto lock = store_.lock();
  auto& s = store_.sessions()[static_cast<size_t>(session_)];
  s.recording.ensureRanks(world);
  if (detailEvents_ > 0 && !bounded_ && world > 0) {
    // Nothing to spill to: the collector writes every rank's events to its --trace-dir.
    s.recording.keepDetailWithin(detailEvents_ / static_cast<size_t>(world), {});
    bounded_ = true;
  }
  if (!configJson.empty()) {
    const auto json = nlohmann::json::parse(configJson, nullptr, false);
    if (json.is_object()) (void)config::applyConfigJson(json, s.config);
    s.config.world = world;
    s.title = std::string(config::strategyName(s.config.strategy)) + " (a launched job, live)";
  }
  s.status = ui::SessionStatus::Running;
  s.error = "rank " + std::to_string(rank) + " of " + std::to_string(world) + " connected from " + peer;
  store_.touch();
}

void LiveJobSink::rankEvents(int rank, const std::vector<trace::Event>& events) {
  Rank& r = rankState(rank);
  std::vector<double> losses;
  for (const trace::Event& e : events) {
    if (e.kind == trace::EventKind::ClockOffset) {
      r.clock.add(e);
      r.clockKnown = true;
      for (auto& held : r.beforeClock) order(r, std::move(held));
      r.beforeClock.clear();
    }
    if (e.kind == trace::EventKind::RunInfo) r.placement = e.text;
    if (e.kind == trace::EventKind::StepEnd && rank == 0) losses.push_back(e.loss);
    if (!trace::isRecordedEvent(e)) continue;
    if (r.clockKnown)
      order(r, e);
    else
      r.beforeClock.push_back(e);
  }
  auto lock = store_.lock();
  auto& s = store_.sessions()[static_cast<size_t>(session_)];
  for (const auto& e : released_) s.recording.add(e);
  released_.clear();
  s.losses.insert(s.losses.end(), losses.begin(), losses.end());
  refreshDevice();
  store_.touch();
}

void LiveJobSink::order(Rank& r, trace::Event e) {
  trace::shiftOntoRank0(e, r.clock);
  e.rank = 0;  // its merger's only rank
  r.order->push(std::move(e));
}

void LiveJobSink::rankEnded(int rank, bool finished, const std::string& how) {
  Rank& r = rankState(rank);
  for (auto& held : r.beforeClock) order(r, std::move(held));  // it went before its clock came
  r.beforeClock.clear();
  r.order->finishRank(0);
  auto lock = store_.lock();
  auto& s = store_.sessions()[static_cast<size_t>(session_)];
  for (const auto& e : released_) s.recording.add(e);
  released_.clear();
  if (!finished) ended_ += (ended_.empty() ? "" : "\n") + how;
  s.error = ended_;
  store_.touch();
}

void LiveJobSink::finish(int collectorExit) {
  for (auto& r : ranks_) {
    if (r.order) r.order->flush();
  }
  auto lock = store_.lock();
  auto& s = store_.sessions()[static_cast<size_t>(session_)];
  for (const auto& e : released_) s.recording.add(e);
  released_.clear();
  s.status = collectorExit == 0 ? ui::SessionStatus::Done : ui::SessionStatus::Failed;
  if (collectorExit == 2) {
    s.error = "the collector could not listen on " + listeningOn_ +
              " (another process may hold the port: choose another); the terminal says why";
  } else if (collectorExit != 0 && ended_.empty())
    s.error = "the collector stopped before every rank had finished";
  store_.touch();
}

void LiveJobSink::refreshDevice() {
  std::vector<std::string> placements;
  for (const auto& r : ranks_) placements.push_back(r.placement);
  store_.sessions()[static_cast<size_t>(session_)].device = trace::describeRankPlacements(placements);
}

}  // namespace shardscope::app
