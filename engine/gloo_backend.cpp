// ProcessGroupGloo for CPU ranks. Gloo talks over TCP on the loopback interface here, so ranks on
// one host exchange real bytes through the kernel's network stack.
#include <cstdlib>

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "engine/backend_factories.h"
#include "engine/c10d_communicator.h"

namespace shardscope {

namespace {

// How long a collective may wait for its peers: 5 minutes, or SHARDSCOPE_GLOO_TIMEOUT_MS (the
// step-gate tests shorten it to show that waiting at the gate never trips it).
std::chrono::milliseconds collectiveTimeout() {
  if (const char* text = std::getenv("SHARDSCOPE_GLOO_TIMEOUT_MS")) {
    const long long ms = std::atoll(text);
    if (ms > 0) return std::chrono::milliseconds(ms);
  }
  return std::chrono::minutes(5);
}

}  // namespace

std::unique_ptr<Communicator> makeGlooCommunicator(const c10::intrusive_ptr<c10d::Store>& store,
                                                   const RendezvousInfo& info) {
  auto options = c10d::ProcessGroupGloo::Options::create();
  options->timeout = collectiveTimeout();
  options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(info.masterAddr));
  auto backend = c10::make_intrusive<c10d::ProcessGroupGloo>(store, info.rank, info.worldSize,
                                                             options);
  // Gloo in LibTorch 2.11 implements _reduce_scatter_base natively. Older Gloo builds did not;
  // SHARDSCOPE_GLOO_REDUCE_SCATTER=all_reduce selects the composed version (all-reduce, keep this
  // rank's slice), which the events then name, so both paths stay tested.
  const char* mode = std::getenv("SHARDSCOPE_GLOO_REDUCE_SCATTER");
  const bool native = !(mode && std::string(mode) == "all_reduce");
  return std::make_unique<C10dCommunicator>(backend, store, "gloo", native);
}

}  // namespace shardscope
