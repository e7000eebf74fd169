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

namespace shardscope {

struct CollectorOptions {
  std::string bindAddress = "127.0.0.1";
  int port = 29700;
  std::string dir;     // where the ranks' files go (created)
  std::string token;   // required of every rank when not empty; must be set off loopback
  int helloTimeoutMs = 5000;
};

// An error naming the option and the fix, for options that cannot work (a token missing off
// loopback, no directory).
std::optional<std::string> checkCollectorOptions(const CollectorOptions& options);

// Collects until every rank of the job has connected and gone, or `shouldStop` (Ctrl-C) says so;
// 0 when every rank finished its run, 1 when one failed or vanished (or it was stopped first), 2
// when it could not listen. What arrived is on disk either way.
int runCollector(const CollectorOptions& options, const std::function<bool()>& shouldStop);

}  // namespace shardscope
