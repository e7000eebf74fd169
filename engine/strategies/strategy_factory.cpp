#include "engine/strategies/ddp_strategy.h"
#include "engine/strategies/sharded_strategy.h"
#include "engine/strategies/zero1_strategy.h"

namespace shardscope {

std::unique_ptr<Strategy> makeStrategy(const RunConfig& config, const StagedModel& model, const ProcessMesh& mesh,
                                       const at::Device& device, StepGate& gate) {
  const StrategyTraits& traits = traitsOf(config.strategy);
  switch (config.strategy) {
    case StrategyKind::Ddp:
    case StrategyKind::NoShard:
      return std::make_unique<DdpStrategy>(config, model, mesh.data(), device, gate);
    case StrategyKind::Zero1:
      return std::make_unique<Zero1Strategy>(config, model, mesh.data(), device, gate);
    case StrategyKind::ShardGradOp:
    case StrategyKind::FullShard:
    case StrategyKind::HybridShardZero2:
    case StrategyKind::HybridShard:
      return std::make_unique<ShardedStrategy>(config, model, mesh, device, traits.reshardsAfterForward, gate);
  }
  TORCH_CHECK(false, "no engine for strategy '", traits.name, "'");
}

}  // namespace shardscope
