// The process groups a strategy talks over, laid out as FSDP2's 2-D DeviceMesh (replicate, shard):
// world ranks in a (world / S) x S grid, row-major. A row is a shard group (the S ranks that split
// the parameters, gradients and optimizer state among them); a column is a replicate group (the
// ranks that hold the same shard, and all-reduce its gradient). A 1-D mesh (every strategy but the
// hybrid ones) has one shard group, the world, and no replicate group.
// Under --tp N the world is first a (data, tensor) grid: a tensor group is N consecutive ranks that
// split the matrices (engine/models/tensor_parallel.h); a data group the world / N ranks with the
// same place in theirs, over which the strategy replicates or shards (config/tensor_parallel.h).
// Under --pp P the world is first P blocks of world / P consecutive ranks, one per pipeline stage,
// each with that (data, tensor) grid inside; a pipe group is the P ranks with the same place in
// their blocks (config/pipeline_config.h).
#pragma once

#include <memory>

#include "engine/recording/clock_sync.h"
#include "engine/comm/communicator.h"

namespace shardscope::engine {

class RankRecorder;

// Where a rank sits in the (replicate, shard) grid.
struct MeshPlace {
  int shardGroup = 0;      // its row: the ranks shardGroup * S .. shardGroup * S + S - 1
  int shardRank = 0;       // its index in that row: rank % S
  int replicateGroup = 0;  // its column: the ranks shardRank, shardRank + S, ...
  int replicateRank = 0;   // its index in that column: rank / S
};
MeshPlace meshPlace(int rank, int shardGroupSize);

class ProcessMesh {
 public:
  explicit ProcessMesh(std::unique_ptr<Communicator> world);  // 1-D
  ProcessMesh(std::unique_ptr<Communicator> world, std::unique_ptr<Communicator> shard,
              std::unique_ptr<Communicator> replicate);
  ~ProcessMesh();
  // Under --tp: this rank's tensor group and data group.
  void setTensorParallel(std::unique_ptr<Communicator> tensor, std::unique_ptr<Communicator> data);
  // Under --pp: this rank's pipe group and, without --tp, its stage's data group (its stage's ranks).
  void setPipeline(std::unique_ptr<Communicator> pipe, std::unique_ptr<Communicator> data);

  Communicator& world() const { return *world_; }
  // The ranks that hold the same tensor-parallel slice and split the batch: the world without --tp.
  Communicator& data() const { return data_ ? *data_ : *world_; }
  // The ranks a unit is sharded over: the data group, or this rank's row of the hybrid grid.
  Communicator& shard() const { return shard_ ? *shard_ : data(); }
  // The ranks that split each matrix (--tp); null without.
  Communicator* tensor() const { return tensor_.get(); }
  // The ranks of the other pipeline stages with this rank's place in theirs (--pp); null without.
  Communicator* pipe() const { return pipe_.get(); }
  // The ranks holding the same shard (a hybrid mesh's column); null on a 1-D mesh.
  Communicator* replicate() const { return replicate_.get(); }

  // End of a finished run: every group's connections released (Communicator::close).
  void close();

  // The clock readings after the first, for a mesh connected with one (else null).
  ClockRounds* clockRounds() const { return clockRounds_.get(); }
  void setClockRounds(std::unique_ptr<ClockRounds> rounds) { clockRounds_ = std::move(rounds); }

 private:
  std::unique_ptr<Communicator> world_, shard_, replicate_, tensor_, data_, pipe_;
  std::unique_ptr<ClockRounds> clockRounds_;
};

// Connects this rank's world group and, when shardGroupSize < the world size, its shard and
// replicate groups, and when tensorGroupSize > 1 its tensor and data groups (each its own backend
// over the same store, under its own prefix, as new_group does). Every group's collectives are recorded into
// `recorder`, named by group. With `clockToRank0`, every rank then measures its clock against rank 0's through the same
// store (engine/recording/clock_sync.h), for a job whose ranks run on several hosts, and the mesh keeps the ClockRounds
// that measure it again (every `clockEverySeconds` between steps; 0: when asked).
std::unique_ptr<ProcessMesh> connectMesh(const RendezvousInfo& info, const RankDevice* gpu, RankRecorder& recorder,
                                         int shardGroupSize, int tensorGroupSize, int pipeGroupSize,
                                         ClockReading* clockToRank0 = nullptr, double clockEverySeconds = 0);

}  // namespace shardscope::engine
