// `shardscope listen`: the collector a job's ranks stream their events to (`shardscope worker
// --collector HOST:PORT`, under torchrun or srun), live. Each rank's lines are appended to
// DIR/rank-R.events as they arrive, rank 0's options to DIR/config.json, so `shardscope view DIR`
// shows the job; the terminal says which ranks connected, each step, and how each rank ended.
//
// It listens on loopback unless told otherwise. On any other address it needs a token, which
// every rank's hello must carry; a connection with no hello, a wrong token, garbage or silence
// (5 s) is refused and logged, and never disturbs the ranks already streaming.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "trace/events.h"

namespace shardscope::engine {

struct CollectorOptions {
  std::string bindAddress = "127.0.0.1";
  int port = 29700;
  std::string dir;    // where the ranks' files go (created)
  std::string token;  // required of every rank when not empty; must be set off loopback
  int helloTimeoutMs = 5000;
};

// What a collector hands on as it goes, besides the files it writes: the app's Listen mode draws
// the job from it live. Called on the collector's thread.
class CollectorSink {
 public:
  virtual ~CollectorSink() = default;
  // A rank's hello was taken (rank 0's carries the job's options as JSON; others "").
  virtual void rankJoined(int rank, int world, const std::string& configJson, const std::string& peer) = 0;
  // Events the rank sent (in the order they came), each line decoded.
  virtual void rankEvents(int rank, const std::vector<trace::Event>& events) = 0;
  // The rank's connection ended: it finished its run, or not (`how` says what happened).
  virtual void rankEnded(int rank, bool finished, const std::string& how) = 0;
};

// An error naming the option and the fix, for options that cannot work (a token missing off
// loopback, no directory).
std::optional<std::string> checkCollectorOptions(const CollectorOptions& options);

// Collects until every rank of the job has connected and gone, or `shouldStop` (Ctrl-C) says so;
// 0 when every rank finished its run, 1 when one failed or vanished (or it was stopped first), 2
// when it could not listen. What arrived is on disk either way.
int runCollector(const CollectorOptions& options, const std::function<bool()>& shouldStop,
                 CollectorSink* sink = nullptr);

}  // namespace shardscope::engine
