#include "engine/clock_sync.h"

#include <limits>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "trace/events.h"

namespace shardscope {

namespace {

std::string key(const char* what, int rank, int exchange) {
  return std::string("shardscope_clock/") + what + "/" + std::to_string(rank) + "/" + std::to_string(exchange);
}

std::vector<uint8_t> encode(int64_t value) {
  const std::string text = std::to_string(value);
  return {text.begin(), text.end()};
}

// A value rank 0 wrote; a stranger's garbage reads as nothing (the exchange is then not used).
bool decode(const std::vector<uint8_t>& bytes, int64_t& value) {
  const std::string text(bytes.begin(), bytes.end());
  if (text.empty() || text.size() > 20) return false;
  size_t used = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used == text.size();
}

}  // namespace

ClockReading measureClockToRank0(c10d::Store& store, int rank, int worldSize, int exchanges) {
  ClockReading best;
  if (rank == 0) {
    // Each rank's pings in turn; the replies carry rank 0's clock when each ping arrived.
    for (int r = 1; r < worldSize; ++r) {
      for (int k = 0; k < exchanges; ++k) {
        (void)store.get(key("ping", r, k));
        store.set(key("pong", r, k), encode(trace::nowNs()));
      }
    }
    best.localNs = best.rank0Ns = trace::nowNs();
    return best;
  }
  best.uncertaintyNs = -1;
  int64_t bestRoundTrip = std::numeric_limits<int64_t>::max();
  for (int k = 0; k < exchanges; ++k) {
    const int64_t sent = trace::nowNs();
    store.set(key("ping", rank, k), encode(sent));
    const auto reply = store.get(key("pong", rank, k));
    const int64_t received = trace::nowNs();
    int64_t answered = 0;
    if (!decode(reply, answered) || received - sent >= bestRoundTrip) continue;
    // Rank 0 read the clock about halfway through the round trip: at (sent + received) / 2 here.
    bestRoundTrip = received - sent;
    best.localNs = sent + bestRoundTrip / 2;
    best.rank0Ns = answered;
    best.uncertaintyNs = (bestRoundTrip + 1) / 2;  // rounded up: the bound holds for an odd round trip
  }
  return best;
}

}  // namespace shardscope
