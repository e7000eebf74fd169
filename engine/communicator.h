// The collectives a strategy needs, behind one interface that ProcessGroupGloo (CPU) and
// ProcessGroupNCCL (GPU) both implement through c10d. Every op reports which primitive really ran,
// so an op built from others (e.g. reduce-scatter from all-reduce) is named as such in events.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <ATen/ATen.h>

namespace shardscope {

// An issued collective; wait() blocks the calling thread until its result is usable.
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  virtual void wait() = 0;
  // Runs `callback` (on any thread) once the collective has completed; at once if it has.
  virtual void onComplete(std::function<void()> callback) = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int worldSize() const = 0;
  virtual std::string backendName() const = 0;  // "gloo" | "nccl"

  // `label` names what the collective is for (an FSDP unit, a DDP bucket) in recorded events.

  // output (world * input.numel(), contiguous) <- concatenation of every rank's input, rank order.
  virtual void allGather(at::Tensor& output, at::Tensor& input, const std::string& label) = 0;
  // output (input.numel() / world) <- this rank's slice of the elementwise sum of every input.
  virtual void reduceScatterSum(at::Tensor& output, at::Tensor& input,
                                const std::string& label) = 0;
  // tensor <- elementwise sum over ranks, issued without waiting.
  virtual std::unique_ptr<PendingCollective> allReduceSumAsync(at::Tensor& tensor,
                                                               const std::string& label) = 0;
  virtual void broadcast(at::Tensor& tensor, int root, const std::string& label) = 0;
  virtual void barrier(const std::string& label) = 0;

  // How the op is implemented by this backend, e.g. "reduce_scatter" or
  // "reduce_scatter(all_reduce+slice)" where the backend lacks the native op.
  virtual std::string reduceScatterImplementation() const = 0;
};

struct RendezvousInfo {
  int rank = 0;
  int worldSize = 1;
  int localRank = 0;
  std::string masterAddr = "127.0.0.1";
  int masterPort = 29500;
};

// Reads torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT).
// Throws std::runtime_error naming the variable when one is missing or malformed.
RendezvousInfo rendezvousFromEnvironment();

// Connects to the TCP store (rank 0 hosts it, as torchrun's static rendezvous does) and builds the
// process group for `device` ("cpu" -> Gloo, "cuda" -> NCCL), wrapped so every collective is
// recorded (RecordingCommunicator).
std::unique_ptr<Communicator> connectCommunicator(const RendezvousInfo& info,
                                                  const std::string& device);

}  // namespace shardscope
