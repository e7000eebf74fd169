#include "ui/memory_at.h"

namespace shardscope::ui {

trace::RoleBytes memoryAt(const trace::RunRecording& rec, int rank, double tNs) {
  return rec.rank(rank).memory.bytesAt(tNs + static_cast<double>(rec.originNs()));
}

trace::RoleBytes memoryAt(const trace::RunRecording& rec, int rank, double tNs, trace::MemorySpace space) {
  if (space == trace::MemorySpace::Device) return memoryAt(rec, rank, tNs);
  return rec.rank(rank).host.memory.bytesAt(tNs + static_cast<double>(rec.originNs()));
}

}  // namespace shardscope::ui
