#include "engine/comm/process_mesh.h"

namespace shardscope::engine {

MeshPlace meshPlace(int rank, int shardGroupSize) {
  const int s = std::max(1, shardGroupSize);
  MeshPlace place;
  place.shardGroup = rank / s;
  place.shardRank = rank % s;
  place.replicateGroup = place.shardRank;
  place.replicateRank = place.shardGroup;
  return place;
}

ProcessMesh::ProcessMesh(std::unique_ptr<Communicator> world) : world_(std::move(world)) {}

ProcessMesh::ProcessMesh(std::unique_ptr<Communicator> world, std::unique_ptr<Communicator> shard,
                         std::unique_ptr<Communicator> replicate)
    : world_(std::move(world)), shard_(std::move(shard)), replicate_(std::move(replicate)) {}

ProcessMesh::~ProcessMesh() = default;

void ProcessMesh::setTensorParallel(std::unique_ptr<Communicator> tensor, std::unique_ptr<Communicator> data) {
  tensor_ = std::move(tensor);
  data_ = std::move(data);
}

void ProcessMesh::setPipeline(std::unique_ptr<Communicator> pipe, std::unique_ptr<Communicator> data) {
  pipe_ = std::move(pipe);
  if (data) data_ = std::move(data);
}

void ProcessMesh::close() {
  // The world group last: its close meets every rank in the store, after which rank 0 (the store's
  // host under a static rendezvous) may exit.
  if (replicate_) replicate_->close();
  if (shard_) shard_->close();
  if (tensor_) tensor_->close();
  if (data_) data_->close();
  if (pipe_) pipe_->close();
  world_->close();
}

}  // namespace shardscope::engine
