#include "estimate/model_state_table.h"

namespace shardscope::estimate {

std::vector<ModelStateRow> modelStateTable(const ModelStateCase& c) {
  const double w = c.parameters * c.bytes.weights;
  const double g = c.parameters * c.trainedFraction * c.bytes.grads;
  const double o = c.parameters * c.trainedFraction * c.bytes.optimizer;
  std::vector<ModelStateRow> rows;
  for (const char* strategy : {"ddp", "zero1", "shard_grad_op", "full_shard"}) {
    for (int n : c.worlds) {
      ModelStateRow r;
      r.strategy = strategy;
      r.world = n;
      const std::string s = strategy;
      if (s == "ddp" || s == "zero1") {
        r.weights = w;
        r.grads = g;
        r.optimizer = s == "zero1" ? o / n : o;  // ZeRO-1 shards the optimizer state only
      } else {
        r.weights = w / n;
        r.gathered = s == "shard_grad_op" ? w : 0;
        r.grads = g / n;
        r.optimizer = o / n;
      }
      r.fits = c.gpuMemoryBytes <= 0 || r.total() <= c.gpuMemoryBytes;
      rows.push_back(r);
    }
  }
  return rows;
}

}  // namespace shardscope::estimate
