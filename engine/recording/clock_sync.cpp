#include "engine/recording/clock_sync.h"

#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "trace/events.h"

namespace shardscope::engine {

namespace {

// Keys of this attempt and round only: torchrun's store outlives a restarted attempt
// (--max-restarts), whose old answers must not be read as this one's.
std::string key(const char* what, int round, int rank, int exchange) {
  const char* attempt = std::getenv("TORCHELASTIC_RESTART_COUNT");
  return std::string("shardscope_clock/") + (attempt ? attempt : "0") + "/" + std::to_string(round) + "/" + what + "/" +
         std::to_string(rank) + "/" + std::to_string(exchange);
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

ClockReading measureClockToRank0(c10d::Store& store, int rank, int worldSize, int round, int exchanges) {
  ClockReading best;
  if (rank == 0) {
    // Each rank's pings in turn; the replies carry rank 0's clock when each ping arrived.
    for (int r = 1; r < worldSize; ++r) {
      for (int k = 0; k < exchanges; ++k) {
        // The answer carries rank 0's clock and, echoed, the ping it answers.
        const std::string pingKey = key("ping", round, r, k);
        const auto ping = store.get(pingKey);
        const std::string answer = std::to_string(trace::nowNs()) + " " + std::string(ping.begin(), ping.end());
        store.set(key("pong", round, r, k), std::vector<uint8_t>(answer.begin(), answer.end()));
        // Read once: a long job measuring every minute would otherwise grow the store without end.
        store.deleteKey(pingKey);
      }
    }
    best.localNs = best.rank0Ns = trace::nowNs();
    return best;
  }
  best.uncertaintyNs = -1;
  int64_t bestRoundTrip = std::numeric_limits<int64_t>::max();
  for (int k = 0; k < exchanges; ++k) {
    const int64_t sent = trace::nowNs();
    store.set(key("ping", round, rank, k), encode(sent));
    const std::string pongKey = key("pong", round, rank, k);
    const auto reply = store.get(pongKey);
    const int64_t received = trace::nowNs();
    store.deleteKey(pongKey);
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

ClockRounds::ClockRounds(c10::intrusive_ptr<c10d::Store> store, int rank, int worldSize, int64_t everyNs)
    : store_(std::move(store)), rank_(rank), worldSize_(worldSize), everyNs_(everyNs), lastNs_(trace::nowNs()) {}

ClockRounds::~ClockRounds() = default;

std::string ClockRounds::announceKey() const { return key("after_step", round_, 0, 0); }

bool ClockRounds::dueAfter(int step) {
  if (everyNs_ <= 0 || worldSize_ < 2) return false;
  if (announcedStep_ < 0) {
    const int64_t elapsed = trace::nowNs() - lastNs_;
    if (rank_ == 0 && elapsed >= everyNs_) {
      announcedStep_ = step + 2;
      store_->set(announceKey(), encode(announcedStep_));
      // A set is not answered: a round trip makes sure the store has it before rank 0 goes on
      // into the next step, whose collectives every other rank must finish before it looks.
      (void)store_->check({announceKey()});
    } else if (rank_ != 0 && elapsed >= everyNs_ / 2 && store_->check({announceKey()})) {
      announcedStep_ = readAnnouncement(step);
    }
  }
  return announcedStep_ == step;
}

int ClockRounds::readAnnouncement(int step) {
  const auto bytes = store_->get(announceKey());
  const std::string text(bytes.begin(), bytes.end());
  int named = -1;
  try {
    named = std::stoi(text);
  } catch (const std::exception&) {}
  // Read too late (or not rank 0's): rank 0 would wait for this rank's pings forever while it
  // waits in the next step's collectives. Said now, the job fails instead of hanging.
  if (named < step) {
    throw std::runtime_error("clock round " + std::to_string(round_) + ": rank 0 named step " + text +
                             " for it, and this rank is already past step " + std::to_string(step) +
                             "; use a longer --clock-every (or 0)");
  }
  return named;
}

ClockReading ClockRounds::measure() {
  const ClockReading reading = measureClockToRank0(*store_, rank_, worldSize_, round_);
  // Every rank has read the announcement before its pings were answered: it can go.
  if (rank_ == 0 && announcedStep_ >= 0) store_->deleteKey(announceKey());
  ++round_;
  announcedStep_ = -1;
  lastNs_ = trace::nowNs();
  return reading;
}

}  // namespace shardscope::engine
