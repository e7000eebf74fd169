#include "engine/strategies/ddp_strategy.h"
#include "engine/strategies/sharded_strategy.h"
#include "engine/strategies/zero1_strategy.h"

namespace shardscope::engine {

std::unique_ptr<Strategy> makeStrategy(const config::RunConfig& config, const StagedModel& model,
                                       const ProcessMesh& mesh, const at::Device& device, StepGate& gate) {
  const config::StrategyTraits& traits = config::traitsOf(config.strategy);
  switch (config.strategy) {
    case config::StrategyKind::Ddp:
    case config::StrategyKind::NoShard:
      return std::make_unique<DdpStrategy>(config, model, mesh.data(), device, gate);
    case config::StrategyKind::Zero1:
      return std::make_unique<Zero1Strategy>(config, model, mesh.data(), device, gate);
    case config::StrategyKind::ShardGradOp:
    case config::StrategyKind::FullShard:
    case config::StrategyKind::HybridShardZero2:
    case config::StrategyKind::HybridShard:
      return std::make_unique<ShardedStrategy>(config, model, mesh, device, traits.reshardsAfterForward, gate);
  }
  TORCH_CHECK(false, "no engine for strategy '", traits.name, "'");
}

}  // namespace shardscope::engine
