#include "engine/ddp_strategy.h"
#include "engine/sharded_strategy.h"
#include "engine/zero1_strategy.h"

namespace shardscope {

std::unique_ptr<Strategy> makeStrategy(const RunConfig& config, const StagedModel& model,
                                       Communicator& comm, const at::Device& device) {
  if (config.strategy == "ddp") return std::make_unique<DdpStrategy>(config, model, comm, device);
  if (config.strategy == "zero1") return std::make_unique<Zero1Strategy>(config, model, comm, device);
  if (config.strategy == "full_shard") {
    return std::make_unique<ShardedStrategy>(config, model, comm, device, /*reshardAfterForward=*/true);
  }
  if (config.strategy == "shard_grad_op") {
    return std::make_unique<ShardedStrategy>(config, model, comm, device, /*reshardAfterForward=*/false);
  }
  TORCH_CHECK(false, "unknown strategy '", config.strategy, "'");
}

}  // namespace shardscope
