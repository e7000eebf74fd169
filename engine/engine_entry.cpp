#include "engine/engine_entry.h"

#include "engine/launch/run_controller.h"

extern "C" __attribute__((visibility("default"))) const shardscope::EngineEntry* shardscope_engine_entry() {
  static const shardscope::EngineEntry entry{shardscope::kEngineEntryLayout, &shardscope::runTraining,
                                             &shardscope::runRankWorker,     &shardscope::checkDeviceAvailable,
                                             &shardscope::trace::useNames,   &shardscope::files::useUnfinishedOutputs};
  return &entry;
}
