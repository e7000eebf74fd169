#include "engine/c10d_communicator.h"

namespace shardscope {

namespace {
class C10dPending final : public PendingCollective {
 public:
  explicit C10dPending(c10::intrusive_ptr<c10d::Work> work) : work_(std::move(work)) {}
  void wait() override {
    if (work_) work_->wait();
    work_.reset();
  }
  void onComplete(std::function<void()> callback) override {
    if (!work_) {
      callback();
      return;
    }
    work_->getFuture()->addCallback(
        [callback = std::move(callback)](c10::ivalue::Future&) { callback(); });
  }

 private:
  c10::intrusive_ptr<c10d::Work> work_;
};
}  // namespace

C10dCommunicator::C10dCommunicator(c10::intrusive_ptr<c10d::Backend> backend,
                                   std::string backendName, bool nativeReduceScatter)
    : backend_(std::move(backend)),
      backendName_(std::move(backendName)),
      nativeReduceScatter_(nativeReduceScatter) {}

int C10dCommunicator::rank() const { return backend_->getRank(); }
int C10dCommunicator::worldSize() const { return backend_->getSize(); }

void C10dCommunicator::allGather(at::Tensor& output, at::Tensor& input, const std::string&) {
  TORCH_CHECK(output.numel() == input.numel() * worldSize(), "allGather: output must hold ",
              worldSize(), " x ", input.numel(), " elements, has ", output.numel());
  backend_->_allgather_base(output, input)->wait();
}

void C10dCommunicator::reduceScatterSum(at::Tensor& output, at::Tensor& input,
                                         const std::string&) {
  TORCH_CHECK(input.numel() == output.numel() * worldSize(), "reduceScatterSum: input must hold ",
              worldSize(), " x ", output.numel(), " elements, has ", input.numel());
  if (nativeReduceScatter_) {
    c10d::ReduceScatterOptions opts;
    opts.reduceOp = c10d::ReduceOp::SUM;
    backend_->_reduce_scatter_base(output, input, opts)->wait();
    return;
  }
  // Built from all-reduce: every rank reduces the whole buffer and keeps its slice.
  std::vector<at::Tensor> tensors{input};
  backend_->allreduce(tensors)->wait();
  output.copy_(input.narrow(0, output.numel() * rank(), output.numel()));
}

std::unique_ptr<PendingCollective> C10dCommunicator::allReduceSumAsync(at::Tensor& tensor,
                                                                       const std::string&) {
  std::vector<at::Tensor> tensors{tensor};
  return std::make_unique<C10dPending>(backend_->allreduce(tensors));
}

void C10dCommunicator::broadcast(at::Tensor& tensor, int root, const std::string&) {
  std::vector<at::Tensor> tensors{tensor};
  c10d::BroadcastOptions opts;
  opts.rootRank = root;
  backend_->broadcast(tensors, opts)->wait();
}

void C10dCommunicator::barrier(const std::string&) { backend_->barrier()->wait(); }

std::string C10dCommunicator::reduceScatterImplementation() const {
  return nativeReduceScatter_ ? "reduce_scatter" : "reduce_scatter(all_reduce+slice)";
}

}  // namespace shardscope
