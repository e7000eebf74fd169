#include "engine/ddp_strategy.h"
#include "engine/sharded_strategy.h"
#include "engine/zero1_strategy.h"

namespace shardscope {

std::unique_ptr<Strategy> makeStrategy(const RunConfig& config, const StagedModel& model,
                                       Communicator& comm, const at::Device& device) {
  const StrategyTraits& traits = traitsOf(config.strategy);
  switch (config.strategy) {
    case StrategyKind::Ddp: return std::make_unique<DdpStrategy>(config, model, comm, device);
    case StrategyKind::Zero1: return std::make_unique<Zero1Strategy>(config, model, comm, device);
    case StrategyKind::ShardGradOp:
    case StrategyKind::FullShard:
      return std::make_unique<ShardedStrategy>(config, model, comm, device, traits.reshardsAfterForward);
  }
  TORCH_CHECK(false, "no engine for strategy '", traits.name, "'");
}

}  // namespace shardscope
