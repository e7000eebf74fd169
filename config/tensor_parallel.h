// Tensor parallelism (--tp N) as Megatron-LM and PyTorch's ColwiseParallel/RowwiseParallel lay it
// out: the world is a (data, tensor) mesh, each tensor group N consecutive ranks that split the
// large matrices among them and see the same data. A column-parallel linear keeps 1/N of its output
// features (rows of W, and of the bias); the row-parallel linear after it keeps 1/N of its input
// features (columns of W), and the partial products are all-reduced over the tensor group. So one
// all-reduce in forward and one in backward per pair. No tensors here: the estimator and the UI
// read this too.
#pragma once

#include <string>
#include <vector>

#include "config/model_layout.h"
#include "config/run_config.h"

namespace shardscope::config {

// How a parameter is divided over a tensor group.
enum class TensorSplit : uint8_t {
  Replicated,     // whole on every rank: norms, embeddings, the row-parallel biases, an odd mlp linear
  Columns,        // a column-parallel weight or bias: dim 0 in N consecutive parts
  FusedColumns3,  // gpt's fused qkv weight: each of q, k and v's rows in N parts (rank t: heads t*h/N..)
  Rows,           // a row-parallel weight: dim 1 in N consecutive parts
};

// The split of each parameter of modelLayout(config), in its order (all Replicated at --tp 1).
// gpt: attn.qkv and mlp.fc column-parallel, attn.proj and mlp.proj row-parallel, heads divided by N;
// mlp: its linears (inp, blocks..., head) paired column-then-row from the first, and the head left
// replicated when their count is odd.
std::vector<TensorSplit> tensorSplits(const RunConfig& config);

// The parameters one rank of a tensor group holds: modelLayout(config) with each split dimension
// divided by config.tp (names kept: they are the full model's).
std::vector<ParamSpec> tensorParallelLayout(const RunConfig& config);

// The mlp linears that stay replicated under config.tp > 1 ("head" when their count is odd), for
// the run's output; empty for gpt and at --tp 1.
std::vector<std::string> replicatedLinears(const RunConfig& config);

// Where a rank sits in the (data, tensor) mesh: tensor group rank / N, index rank % N in it.
struct TensorPlace {
  int dataRank = 0;    // rank / N: which slice of the global batch it trains on
  int dataRanks = 1;   // world / N
  int tensorRank = 0;  // rank % N
};
TensorPlace tensorPlace(int rank, int worldSize, int tensorRanks);

}  // namespace shardscope::config
