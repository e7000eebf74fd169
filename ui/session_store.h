// The retained model the UI draws: one Session per run (a compare adds one per strategy). The
// engine side appends events to a session from its own thread; the UI reads under the same lock
// once per frame. Nothing here knows LibTorch.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config/run_config.h"
#include "trace/collective_log.h"
#include "trace/run_recording.h"
#include "stats/run_stats.h"

namespace shardscope::ui {

enum class SessionStatus { Starting, Running, Done, Failed };

// A live run under --step-gate: where its ranks wait (from the controller's GateStatus).
struct SessionGate {
  bool gated = false;  // started with --step-gate group|step and not continued yet
  int waiting = 0;     // ranks waiting at the gate now
  int ranks = 0;
  std::string next;  // the event group they wait before
  int step = -1;
  bool allWaiting() const { return gated && ranks > 0 && waiting == ranks; }
};

struct Session {
  std::string title;  // e.g. "full_shard (FULL_SHARD, ZeRO-3)"
  config::RunConfig config;
  trace::RunRecording recording;
  SessionStatus status = SessionStatus::Starting;
  std::string error;   // what went wrong and what to do
  std::string device;  // e.g. "cpu / gloo"
  int64_t parameterCount = 0;
  stats::DeviceFacts deviceFacts;  // rank 0's GPU as it reported itself: capacity and MFU peak unless stated
  std::vector<double> losses;      // global mean loss per completed step
  std::string jobLabel;            // what ran, when not shardscope's model (a PyTorch job's trace):
                                   // shown instead of the model and steps of `config`
  std::string everyStepIn;         // where every step is on disk when the session folds its oldest
                                   // (a launched job's collector directory); else its --trace, if any
  SessionGate gate;
  // A session opened from a saved summary has figures but no timeline: they are used instead of
  // figures derived from `recording`.
  bool fromSummary = false;
  std::vector<stats::RankStats> savedStats;
  // Each rank's last collectives (Flight Recorder dumps), drawn in the Last collectives tab.
  std::shared_ptr<const trace::CollectiveLogs> collectiveLogs;
};

// Whether any of them is recording a run now; `gatedToo` false leaves out runs held at a step gate,
// whose recordings change only when the user steps them.
bool anyRecording(const std::vector<Session>& sessions, bool gatedToo = true);

class SessionStore {
 public:
  // Locks the store for the lifetime of the returned guard.
  std::unique_lock<std::mutex> lock() { return std::unique_lock<std::mutex>(mutex_); }

  // Under lock():
  std::vector<Session>& sessions() { return sessions_; }
  int add(Session session);  // returns its index
  void clear() {
    sessions_.clear();
    ++version_;
  }
  uint64_t version() const { return version_; }  // bumps on every change
  void touch() { ++version_; }

 private:
  std::mutex mutex_;
  std::vector<Session> sessions_;
  uint64_t version_ = 0;
};

// Where the controller's Open stands (EngineControl::openRecord).
struct OpenStatus {
  bool reading = false;
  uint64_t finished = 0;   // opens finished so far: the window takes in each once
  std::string what;        // the path (or the first of the files) read, or being read
  std::string progress;    // while reading: "45% of 870 MB" (files::ReadProgress)
  bool beside = false;     // added to the sessions shown rather than in place of them
  std::string error;       // the last finished open's: why nothing was opened (the sessions stay)
  std::string notes;       // its lines on what was read with something missing or moved
  bool ownConfig = false;  // the record is shardscope's own run: `config` is its configuration
  config::RunConfig config;
};

// What the UI asks of the engine. Implemented outside the UI library (app/), over the controller.
class EngineControl {
 public:
  virtual ~EngineControl() = default;
  virtual void startRun(const config::RunConfig& config) = 0;  // one session
  // One session per strategy, one after another, on the same model and data.
  virtual void startCompare(const std::vector<config::RunConfig>& runs) = 0;  // one session each (comparisonRuns)
  // As startCompare, each session titled as given (a lesson's "prefetch 0", "prefetch 1").
  virtual void startTitled(const std::vector<config::RunConfig>& runs, const std::vector<std::string>& titles) {
    (void)titles;
    startCompare(runs);
  }
  virtual void stop() = 0;
  // --step-gate: release every rank of the running session for one event group, or for the rest
  // of the run.
  virtual void stepGate() = 0;
  virtual void continueGate() = 0;
  virtual bool busy() const = 0;
  // A check of what only the engine knows (e.g. that --device cuda has a GPU); empty when fine.
  virtual std::string checkConfig(const config::RunConfig& config) const = 0;
  // Why nothing can run here at all (the browser's page has no engine), for Run and Compare alike;
  // empty where runs can start.
  virtual std::string runsUnavailable() const { return ""; }
  // Listen mode: a collector on loopback `port` writing into `dir`, its job drawn as one session
  // as the ranks stream; Stop ends it. Empty when it started, else why not.
  virtual std::string startListen(int port, const std::string& dir) {
    (void)port;
    (void)dir;
    return "listening for a launched job needs the app's engine";
  }
  // Reads saved records (ui/record_files.h) off the window's thread and, once read, shows them in
  // place of the sessions, or beside them (`beside`); a record that cannot be read leaves them as
  // they are. Empty when the reading started, else why not.
  virtual std::string openRecord(const std::vector<std::string>& paths, bool beside) {
    (void)paths;
    (void)beside;
    return "opening a recording needs the app's engine";
  }
  virtual OpenStatus openStatus() const { return {}; }
};

}  // namespace shardscope::ui
