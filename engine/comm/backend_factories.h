// Builders for the concrete c10d backends. NCCL exists only in CUDA builds; elsewhere its builder
// throws an error that says so.
#pragma once

#include <memory>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "engine/comm/communicator.h"

namespace shardscope::engine {

std::unique_ptr<Communicator> makeGlooCommunicator(const c10::intrusive_ptr<c10d::Store>& store,
                                                   const RendezvousInfo& info);
std::unique_ptr<Communicator> makeNcclCommunicator(const c10::intrusive_ptr<c10d::Store>& store,
                                                   const RendezvousInfo& info, const RankDevice& gpu);

}  // namespace shardscope::engine
