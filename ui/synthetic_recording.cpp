#include "ui/synthetic_recording.h"

#include <string>

namespace shardscope::ui {

trace::RunRecording syntheticRecording(int ranks, int eventsPerRank, int units) {
  using namespace trace;
  RunRecording rec(ranks);
  const int64_t unitBytes = 4 << 20;
  const int perUnit = 8;  // events per unit per phase below
  const int steps = std::max(1, eventsPerRank / (units * 2 * perUnit));
  for (int r = 0; r < ranks; ++r) {
    int64_t t = 1'000'000;
    auto add = [&](Event e) {
      e.rank = r;
      rec.add(e);
    };
    auto memory = [&](MemoryRole role, int64_t bytes, int32_t unit = kNoUnit) {
      Event e;
      e.kind = EventKind::Memory;
      e.beginNs = t;
      e.role = static_cast<uint8_t>(role);
      e.bytes = bytes;
      e.unit = unit;
      add(e);
    };
    auto group = [&](GroupKind kind, const std::string& label, int step) {
      Event g;
      g.kind = EventKind::Group;
      g.op = static_cast<uint8_t>(kind);
      g.step = step;
      g.beginNs = g.endNs = t;
      g.text = label;
      add(g);
    };
    for (int u = 0; u < units; ++u) memory(MemoryRole::ParamShard, unitBytes / ranks, u);
    for (int step = 0; step < steps; ++step) {
      for (int phase = 0; phase < 2; ++phase) {
        for (int u = 0; u < units; ++u) {
          const std::string unit = "blocks." + std::to_string(u);
          group(GroupKind::Collective, "all_gather " + unit, step);
          memory(MemoryRole::ParamGathered, unitBytes, u);
          Event ag;
          ag.kind = EventKind::Collective;
          ag.op = static_cast<uint8_t>(CollectiveOp::AllGather);
          ag.step = step;
          ag.phase = static_cast<uint8_t>(phase == 0 ? Phase::Forward : Phase::Backward);
          ag.issueNs = ag.beginNs = t;
          ag.endNs = t += 20'000;
          ag.bytes = unitBytes / ranks;
          ag.bytesOut = unitBytes;
          ag.worldSize = ranks;
          ag.text = "blocks." + std::to_string(u);
          add(ag);
          group(phase == 0 ? GroupKind::Forward : GroupKind::Backward, (phase == 0 ? "forward " : "backward ") + unit,
                step);
          Event c;
          c.kind = EventKind::Compute;
          c.op = static_cast<uint8_t>(phase == 0 ? ComputeKind::Forward : ComputeKind::Backward);
          c.step = step;
          c.beginNs = t;
          for (int k = 0; k < perUnit - 4; ++k) {
            t += 2'000;
            memory(MemoryRole::Activation, phase == 0 ? 65536 : -65536);
          }
          c.endNs = t += 5'000;
          c.text = ag.text;
          add(c);
          group(GroupKind::Reshard, "reshard " + unit, step);
          memory(MemoryRole::ParamGathered, -unitBytes, u);
          t += 1'000;
        }
      }
    }
  }
  return rec;
}

}  // namespace shardscope::ui
