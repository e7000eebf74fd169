#include "engine/engine_entry.h"

#include "engine/launch/run_controller.h"

extern "C" __attribute__((visibility("default"))) const shardscope::engine::EngineEntry* shardscope_engine_entry() {
  static const shardscope::engine::EngineEntry entry{
      shardscope::engine::kEngineEntryLayout, &shardscope::engine::runTraining,
      &shardscope::engine::runRankWorker,     &shardscope::engine::checkDeviceAvailable,
      &shardscope::trace::useNames,           &shardscope::files::useUnfinishedOutputs};
  return &entry;
}
