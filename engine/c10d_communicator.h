// Communicator over any c10d::Backend: the same calls drive ProcessGroupGloo and ProcessGroupNCCL.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include "engine/communicator.h"

namespace shardscope {

class C10dCommunicator final : public Communicator {
 public:
  C10dCommunicator(c10::intrusive_ptr<c10d::Backend> backend, std::string backendName,
                   bool nativeReduceScatter);

  int rank() const override;
  int worldSize() const override;
  std::string backendName() const override { return backendName_; }

  void allGather(at::Tensor& output, at::Tensor& input, const std::string& label) override;
  void reduceScatterSum(at::Tensor& output, at::Tensor& input, const std::string& label) override;
  std::unique_ptr<PendingCollective> allReduceSumAsync(at::Tensor& tensor,
                                                       const std::string& label) override;
  void broadcast(at::Tensor& tensor, int root, const std::string& label) override;
  void barrier(const std::string& label) override;
  std::string reduceScatterImplementation() const override;

 private:
  c10::intrusive_ptr<c10d::Backend> backend_;
  std::string backendName_;
  bool nativeReduceScatter_;
};

}  // namespace shardscope
