#include "engine/comm/c10d_communicator.h"

#include <algorithm>
#include <climits>
#include <mutex>
#include <typeindex>
#include <unordered_set>
#include <utility>

#include "trace/events.h"

namespace shardscope::engine {

namespace {

// Some Gloo ops (all-gather/reduce-scatter into one flat tensor) have no future, and asking throws.
// Asked once per kind of Work: a throw per collective would capture a backtrace on the hot path.
class FuturelessWorkTypes {
 public:
  bool has(const c10d::Work& work) {
    std::lock_guard<std::mutex> lock(mutex_);
    return types_.count(std::type_index(typeid(work))) > 0;
  }
  void add(const c10d::Work& work) {
    std::lock_guard<std::mutex> lock(mutex_);
    types_.insert(std::type_index(typeid(work)));
  }

 private:
  std::mutex mutex_;
  std::unordered_set<std::type_index> types_;
};

FuturelessWorkTypes& futurelessWorkTypes() {
  static FuturelessWorkTypes types;
  return types;
}

// Tells a collective's end once, from whichever thread sees it first: the backend's, completing
// its future, or the waiting one, catching its error. The second waits until the first has told
// it, so that the rank's error, reported once wait() throws, follows the failure's record.
class EndOnce {
 public:
  void set(std::function<void(const CollectiveEnd&)> ended) {
    std::lock_guard<std::mutex> lock(mutex_);
    ended_ = std::move(ended);
  }
  void end(const CollectiveEnd& how) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (ended_) std::exchange(ended_, nullptr)(how);
  }

 private:
  std::mutex mutex_;
  std::function<void(const CollectiveEnd&)> ended_;
};

class HostPending final : public PendingCollective {
 public:
  explicit HostPending(c10::intrusive_ptr<c10d::Work> work)
      : work_(std::move(work)), issueNs_(trace::nowNs()), ending_(std::make_shared<EndOnce>()) {}
  void wait() override {
    try {
      if (work_) work_->wait();
    } catch (...) {
      ending_->end({false, issueNs_, trace::nowNs()});
      throw;
    }
    if (endsAtWait_) ending_->end({true, issueNs_, trace::nowNs()});
  }
  void onEnded(std::function<void(const CollectiveEnd&)> ended) override {
    ending_->set(std::move(ended));
    const int64_t issue = issueNs_;
    c10::intrusive_ptr<c10::ivalue::Future> future;
    if (!futurelessWorkTypes().has(*work_)) {
      try {
        future = work_->getFuture();
      } catch (const c10::Error&) {
        futurelessWorkTypes().add(*work_);
      }
    }
    if (!future) {
      // Without a future, the end is taken when the caller has waited for the collective, the
      // earliest moment it is known.
      endsAtWait_ = true;
      return;
    }
    // The future completes on the backend's thread; that moment is the collective's end, or its
    // failure's (a future completed with an error).
    future->addCallback([ending = ending_, issue](c10::ivalue::Future& done) {
      ending->end({!done.hasError(), issue, trace::nowNs()});
    });
  }

 private:
  c10::intrusive_ptr<c10d::Work> work_;
  int64_t issueNs_;
  std::shared_ptr<EndOnce> ending_;  // shared with the future's callback, which may outlive this
  bool endsAtWait_ = false;
};

// Reduce-scatter composed from all-reduce: the slice is taken once the all-reduce is done.
class SlicedPending final : public PendingCollective {
 public:
  SlicedPending(std::unique_ptr<PendingCollective> inner, std::function<void()> slice)
      : inner_(std::move(inner)), slice_(std::move(slice)) {}
  void wait() override {
    inner_->wait();
    if (slice_) slice_();
    slice_ = nullptr;
  }
  void onEnded(std::function<void(const CollectiveEnd&)> ended) override { inner_->onEnded(std::move(ended)); }

 private:
  std::unique_ptr<PendingCollective> inner_;
  std::function<void()> slice_;
};

// Several collectives that make one: waited for together, timed from the first's issue to the
// last's end; failed as soon as one of them fails.
class AllOfPending final : public PendingCollective {
 public:
  explicit AllOfPending(std::vector<std::unique_ptr<PendingCollective>> parts) : parts_(std::move(parts)) {}
  void wait() override {
    for (auto& part : parts_) part->wait();
  }
  void onEnded(std::function<void(const CollectiveEnd&)> ended) override {
    struct Span {
      std::mutex mutex;
      size_t left;
      int64_t begin = INT64_MAX;
      int64_t end = 0;
      std::function<void(const CollectiveEnd&)> ended;  // empty once told
    };
    auto span = std::make_shared<Span>();
    span->left = parts_.size();
    span->ended = std::move(ended);
    for (auto& part : parts_) {
      part->onEnded([span](const CollectiveEnd& how) {
        std::function<void(const CollectiveEnd&)> done;
        CollectiveEnd all;
        {
          std::lock_guard<std::mutex> lock(span->mutex);
          span->begin = std::min(span->begin, how.beginNs);
          span->end = std::max(span->end, how.endNs);
          if (!how.completed || --span->left == 0) done = std::exchange(span->ended, nullptr);
          all = {how.completed, span->begin, how.completed ? span->end : how.endNs};
        }
        if (done) done(all);
      });
    }
  }

 private:
  std::vector<std::unique_ptr<PendingCollective>> parts_;
};

}  // namespace

C10dCommunicator::C10dCommunicator(c10::intrusive_ptr<c10d::Backend> backend, c10::intrusive_ptr<c10d::Store> store,
                                   std::string backendName, CollectiveRecipes recipes,
                                   std::unique_ptr<CollectiveStream> stream)
    : backend_(std::move(backend)),
      store_(std::move(store)),
      backendName_(std::move(backendName)),
      recipes_(recipes),
      stream_(std::move(stream)) {}

int C10dCommunicator::rank() const { return backend_->getRank(); }
int C10dCommunicator::worldSize() const { return backend_->getSize(); }

namespace {

// PyTorch's Flight Recorder is one per process, and ProcessGroupGloo records each collective it
// enqueues into it: from groups issuing on several threads at once, PyTorch 2.11 can crash there
// (std::map's insert in FlightRecorder::recordWithResetEnabled, caught under gdb in a test that runs
// four ranks on threads of one process). A rank process issues from one thread, so this lock is
// uncontended there; ranks on threads take turns to issue, not to run. Gloo's only: NCCL's first
// collective waits inside its issue for every rank, which a lock across threads would deadlock.
std::mutex& glooIssueMutex() {
  static std::mutex mutex;
  return mutex;
}

}  // namespace

c10::intrusive_ptr<c10d::Work> C10dCommunicator::issued(
    const std::function<c10::intrusive_ptr<c10d::Work>(bool asyncOp)>& issue, bool asyncOp) const {
  if (backendName_ != "gloo") return issue(asyncOp);
  std::lock_guard<std::mutex> lock(glooIssueMutex());
  return issue(asyncOp);
}

std::unique_ptr<PendingCollective> C10dCommunicator::launch(
    const std::function<c10::intrusive_ptr<c10d::Work>(bool asyncOp)>& issue) {
  if (stream_) return stream_->run([&](bool asyncOp) { return issued(issue, asyncOp); });
  return std::make_unique<HostPending>(issued(issue, /*asyncOp=*/true));
}

std::unique_ptr<PendingCollective> C10dCommunicator::allGatherAsync(at::Tensor& output, at::Tensor& input,
                                                                    const std::string&) {
  TORCH_CHECK(output.numel() == input.numel() * worldSize(), "allGather: output must hold ", worldSize(), " x ",
              input.numel(), " elements, has ", output.numel());
  if (recipes_.allGatherFromBroadcasts) return allGatherFromBroadcasts(output, input);
  return launch([&](bool asyncOp) {
    c10d::AllgatherOptions opts;
    opts.asyncOp = asyncOp;
    return backend_->_allgather_base(output, input, opts);
  });
}

// Rank k's part of the output is broadcast from rank k, in place: no staging buffer, no copy out.
// Every rank issues the broadcasts in the same order, so the backend's queue pairs them up.
std::unique_ptr<PendingCollective> C10dCommunicator::allGatherFromBroadcasts(at::Tensor& output, at::Tensor& input) {
  TORCH_CHECK(output.is_contiguous(), "allGather: output must be contiguous");
  TORCH_CHECK(input.scalar_type() == output.scalar_type() && input.device() == output.device(),
              "allGather: input and output must have one dtype and device, as Gloo's own requires");
  at::Tensor flat = output.view({-1});
  const int64_t part = input.numel();
  at::Tensor mine = flat.narrow(0, rank() * part, part);
  if (mine.data_ptr() != input.data_ptr()) mine.copy_(input.reshape({-1}));
  std::vector<std::unique_ptr<PendingCollective>> broadcasts;
  for (int root = 0; root < worldSize(); ++root) {
    at::Tensor slot = flat.narrow(0, root * part, part);
    broadcasts.push_back(broadcastAsync(slot, root, ""));
  }
  return std::make_unique<AllOfPending>(std::move(broadcasts));
}

std::unique_ptr<PendingCollective> C10dCommunicator::reduceScatterSumAsync(at::Tensor& output, at::Tensor& input,
                                                                           const std::string&) {
  TORCH_CHECK(input.numel() == output.numel() * worldSize(), "reduceScatterSum: input must hold ", worldSize(), " x ",
              output.numel(), " elements, has ", input.numel());
  if (recipes_.nativeReduceScatter) {
    return launch([&](bool asyncOp) {
      c10d::ReduceScatterOptions opts;
      opts.reduceOp = c10d::ReduceOp::SUM;
      opts.asyncOp = asyncOp;
      return backend_->_reduce_scatter_base(output, input, opts);
    });
  }
  // Built from all-reduce: every rank reduces the whole buffer and keeps its slice.
  auto reduced = allReduceSumAsync(input, "");
  const int64_t offset = output.numel() * rank();
  return std::make_unique<SlicedPending>(
      std::move(reduced), [output, input, offset]() mutable { output.copy_(input.narrow(0, offset, output.numel())); });
}

std::unique_ptr<PendingCollective> C10dCommunicator::allReduceSumAsync(at::Tensor& tensor, const std::string&) {
  return launch([&](bool asyncOp) {
    std::vector<at::Tensor> tensors{tensor};
    c10d::AllreduceOptions opts;
    opts.asyncOp = asyncOp;
    return backend_->allreduce(tensors, opts);
  });
}

std::unique_ptr<PendingCollective> C10dCommunicator::sendAsync(at::Tensor& tensor, int peer, int tag,
                                                               const std::string&) {
  return launch([&](bool) {
    std::vector<at::Tensor> tensors{tensor};
    return backend_->send(tensors, peer, tag);
  });
}

std::unique_ptr<PendingCollective> C10dCommunicator::recvAsync(at::Tensor& tensor, int peer, int tag,
                                                               const std::string&) {
  return launch([&](bool) {
    std::vector<at::Tensor> tensors{tensor};
    return backend_->recv(tensors, peer, tag);
  });
}

bool C10dCommunicator::batchesPointToPoint() const { return backend_->supportsCoalescing(); }

Communicator::SendRecvPending C10dCommunicator::sendRecvAsync(const Transfer& send, const Transfer& recv) {
  if (!batchesPointToPoint()) return Communicator::sendRecvAsync(send, recv);
  SendRecvPending out;
  // Two ranks that each send to the other before receiving (1F1B's steady state) would wait on each
  // other's send where the backend blocks a send until its receive is posted; in one group, NCCL
  // posts both before either runs.
  out.both = launch([&](bool) {
    std::vector<at::Tensor> sent{*send.tensor}, received{*recv.tensor};
    backend_->startCoalescing();
    backend_->send(sent, send.peer, send.tag);
    backend_->recv(received, recv.peer, recv.tag);
    return backend_->endCoalescing();
  });
  return out;
}

std::unique_ptr<PendingCollective> C10dCommunicator::broadcastAsync(at::Tensor& tensor, int root, const std::string&) {
  return launch([&](bool asyncOp) {
    std::vector<at::Tensor> tensors{tensor};
    c10d::BroadcastOptions opts;
    opts.rootRank = root;
    opts.asyncOp = asyncOp;
    return backend_->broadcast(tensors, opts);
  });
}

void C10dCommunicator::barrier(const std::string&) {
  issued([&](bool) { return backend_->barrier(); }, /*asyncOp=*/true)->wait();
}

void C10dCommunicator::close() {
  // Each rank arrives here only once its own part of the final barrier has completed, so when all
  // have arrived no collective has bytes left in flight. The last to arrive says so.
  const std::string arrived = "end_of_run/arrived";
  const std::string allArrived = "end_of_run/all_arrived";
  try {
    if (store_->add(arrived, 1) == worldSize()) store_->set(allArrived, std::vector<uint8_t>{1});
    store_->wait({allArrived}, std::chrono::seconds(60));
  } catch (const std::exception&) {
    // The store lives in rank 0, which may exit as soon as it has its answer, before a peer has
    // read its own: that peer was counted, so nothing is in flight and it can abort too.
  }
  backend_->abort();
}

std::optional<c10::Stream> C10dCommunicator::collectiveStream() const {
  if (!stream_) return std::nullopt;
  return stream_->stream();
}

std::string C10dCommunicator::reduceScatterImplementation() const {
  return recipes_.nativeReduceScatter ? "reduce_scatter" : "reduce_scatter(all_reduce+slice)";
}

std::string C10dCommunicator::allGatherImplementation() const {
  return recipes_.allGatherFromBroadcasts ? "all_gather(broadcast from each rank)" : "all_gather";
}

}  // namespace shardscope::engine
