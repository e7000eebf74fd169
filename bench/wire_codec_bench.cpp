// What the wire costs a rank and its reader, on a real rank's events: bytes and nanoseconds per
// event to encode and decode them as binary frames (trace/wire.h, today's wire) and as the JSON
// lines the wire carried before. The events come from a rank's stream as `shardscope worker
// --trace-dir DIR` wrote it (DIR/rank-R.events), so the mix of kinds, sizes and times is a run's.
//   build/bench/wire_codec_bench DIR/rank-0.events [repeats=5]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "trace/wire.h"

namespace {

using namespace shardscope::trace;
using Clock = std::chrono::steady_clock;

std::vector<Event> readStream(const char* path) {
  std::ifstream in(path, std::ios::binary);
  StreamSplitter items;
  std::vector<Event> events;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    items.feed(chunk, static_cast<size_t>(in.gcount()), [&](std::string_view item) {
      if (auto e = decodeStreamItem(item)) events.push_back(std::move(*e));
    });
  }
  return events;
}

// The best of `repeats` timings of `work`, in ns per event.
double bestNsPerEvent(int repeats, size_t events, const std::function<void()>& work) {
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    work();
    const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
    best = std::min(best, ns / static_cast<double>(events));
  }
  return best;
}

struct Codec {
  const char* name;
  std::function<void(std::string&, const Event&)> append;
};

void measure(const Codec& codec, const std::vector<Event>& events, int repeats) {
  std::string stream;
  const double encodeNs = bestNsPerEvent(repeats, events.size(), [&] {
    stream.clear();
    for (const Event& e : events) codec.append(stream, e);
  });
  size_t decoded = 0;
  const double decodeNs = bestNsPerEvent(repeats, events.size(), [&] {
    decoded = 0;
    StreamSplitter items;
    items.feed(stream.data(), stream.size(), [&](std::string_view item) { decoded += decodeStreamItem(item) ? 1 : 0; });
  });
  std::printf("| %s | %.1f | %.0f | %.0f | %zu of %zu |\n", codec.name,
              static_cast<double>(stream.size()) / static_cast<double>(events.size()), encodeNs, decodeNs, decoded,
              events.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR/rank-R.events [repeats=5]\n", argv[0]);
    return 2;
  }
  const int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  const std::vector<Event> events = readStream(argv[1]);
  if (events.empty()) {
    std::fprintf(stderr, "%s: no events read; give a rank's stream, DIR/rank-R.events\n", argv[1]);
    return 1;
  }
  size_t memory = 0;
  for (const Event& e : events) memory += e.kind == EventKind::Memory ? 1 : 0;
  std::printf("%zu events (%.0f %% memory) from %s, best of %d\n\n", events.size(),
              100.0 * static_cast<double>(memory) / static_cast<double>(events.size()), argv[1], repeats);
  std::printf("| wire | bytes / event | encode ns / event | decode ns / event | decoded |\n|---|---|---|---|---|\n");
  measure({"binary frames", [](std::string& out, const Event& e) { appendEventFrame(out, e); }}, events, repeats);
  measure({"JSON lines (before)", [](std::string& out, const Event& e) { out += encodeEventLine(e); }}, events,
          repeats);
  return 0;
}
