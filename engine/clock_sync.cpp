#include "engine/clock_sync.h"

#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "trace/events.h"

namespace shardscope {

namespace {

// Keys of this attempt only: torchrun's store outlives a restarted attempt (--max-restarts), whose
// old answers must not be read as this one's.
std::string key(const char* what, int rank, int exchange) {
  const char* attempt = std::getenv("TORCHELASTIC_RESTART_COUNT");
  return std::string("shardscope_clock/") + (attempt ? attempt : "0") + "/" + what + "/" + std::to_string(rank) + "/" +
         std::to_string(exchange);
}

std::vector<uint8_t> encode(int64_t value) {
  const std::string text = std::to_string(value);
  return {text.begin(), text.end()};
}

// Rank 0's answer to the ping sent at `sent`: its clock then, or false for anything else (a
// stranger's garbage, another attempt's answer); that exchange is then not used.
bool decodeAnswer(const std::vector<uint8_t>& bytes, int64_t sent, int64_t& rank0Ns) {
  const std::string text(bytes.begin(), bytes.end());
  const size_t space = text.find(' ');
  if (space == std::string::npos || space == 0 || space > 20 || text.substr(space + 1) != std::to_string(sent)) {
    return false;
  }
  size_t used = 0;
  try {
    rank0Ns = std::stoll(text.substr(0, space), &used);
  } catch (const std::exception&) {
    return false;
  }
  return used == space;
}

}  // namespace

ClockReading measureClockToRank0(c10d::Store& store, int rank, int worldSize, int exchanges) {
  ClockReading best;
  if (rank == 0) {
    // Each rank's pings in turn; the replies carry rank 0's clock when each ping arrived.
    for (int r = 1; r < worldSize; ++r) {
      for (int k = 0; k < exchanges; ++k) {
        // The answer carries rank 0's clock and, echoed, the ping it answers.
        const auto ping = store.get(key("ping", r, k));
        const std::string answer = std::to_string(trace::nowNs()) + " " + std::string(ping.begin(), ping.end());
        store.set(key("pong", r, k), std::vector<uint8_t>(answer.begin(), answer.end()));
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
    if (!decodeAnswer(reply, sent, answered) || received - sent >= bestRoundTrip) continue;
    // Rank 0 read the clock about halfway through the round trip: at (sent + received) / 2 here.
    bestRoundTrip = received - sent;
    best.localNs = sent + bestRoundTrip / 2;
    best.rank0Ns = answered;
    best.uncertaintyNs = (bestRoundTrip + 1) / 2;  // rounded up: the bound holds for an odd round trip
  }
  return best;
}

}  // namespace shardscope
