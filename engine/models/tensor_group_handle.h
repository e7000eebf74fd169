// How the tensor-parallel autograd functions (tensor_parallel.cpp, sequence_parallel.cpp) carry
// their group through autograd's saved data: as an integer, since IValue holds no raw pointer. The
// model that made the graph, and its mesh, outlive every backward of it.
#pragma once

#include <cstdint>

#include <torch/autograd.h>

#include "engine/comm/communicator.h"

namespace shardscope::engine {

inline int64_t groupHandle(Communicator* group) { return static_cast<int64_t>(reinterpret_cast<intptr_t>(group)); }
inline Communicator& groupOfHandle(int64_t handle) {
  return *reinterpret_cast<Communicator*>(static_cast<intptr_t>(handle));
}
inline Communicator& savedGroup(torch::autograd::AutogradContext* ctx) {
  return groupOfHandle(ctx->saved_data["group"].toInt());
}

}  // namespace shardscope::engine
