// Communicator over any c10d::Backend: the same calls drive ProcessGroupGloo and ProcessGroupNCCL.
// With a CollectiveStream (GPU ranks) every collective is queued on the communication stream;
// without one (CPU ranks) it runs on the backend's threads and completes on the host.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include "engine/collective_stream.h"
#include "engine/communicator.h"

namespace shardscope {

class C10dCommunicator final : public Communicator {
 public:
  C10dCommunicator(c10::intrusive_ptr<c10d::Backend> backend, std::string backendName,
                   bool nativeReduceScatter, std::unique_ptr<CollectiveStream> stream = nullptr);

  int rank() const override;
  int worldSize() const override;
  std::string backendName() const override { return backendName_; }

  std::unique_ptr<PendingCollective> allGatherAsync(at::Tensor& output, at::Tensor& input,
                                                    const std::string& label) override;
  std::unique_ptr<PendingCollective> reduceScatterSumAsync(at::Tensor& output, at::Tensor& input,
                                                           const std::string& label) override;
  std::unique_ptr<PendingCollective> allReduceSumAsync(at::Tensor& tensor,
                                                       const std::string& label) override;
  std::unique_ptr<PendingCollective> broadcastAsync(at::Tensor& tensor, int root,
                                                    const std::string& label) override;
  void barrier(const std::string& label) override;
  // abort(), not shutdown(): shutdown finalizes the NCCL communicators and waits for that without a
  // timeout, and after the final barrier there is nothing left to flush. abort() is what the
  // destructor did in every earlier run, minus the warning. (Gloo implements neither.)
  void close() override { backend_->abort(); }
  std::string reduceScatterImplementation() const override;
  std::optional<c10::Stream> collectiveStream() const override;

 private:
  std::unique_ptr<PendingCollective> launch(
      const std::function<c10::intrusive_ptr<c10d::Work>()>& issue);

  c10::intrusive_ptr<c10d::Backend> backend_;
  std::string backendName_;
  bool nativeReduceScatter_;
  std::unique_ptr<CollectiveStream> stream_;
};

}  // namespace shardscope
