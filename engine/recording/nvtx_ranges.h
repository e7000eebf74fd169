// NVTX ranges (NVIDIA Tools Extension), named as shardscope's trace names its spans, so that a run
// under `nsys profile` shows shardscope's steps, each unit's forward, backward and recompute, the
// optimizer, and every collective beside the kernels they launched ("step 3", "forward
// blocks.1", "recompute blocks.1", "all_gather blocks.1"), in the "shardscope" domain.
//
// NVTX 3 is header-only (the CUDA toolkit's): a range costs nothing unless a tool injected itself
// (nsys sets NVTX_INJECTION64_PATH in the processes it profiles). Without that variable, or
// without NVTX's headers at build time, nothing is called and no name is built. CPU ranks emit
// them too (nsys traces CPU processes; and a test can check them without a GPU).
#pragma once

#include <string>

namespace shardscope::engine {

// Whether a tool listens: NVTX_INJECTION64_PATH was set when the process started.
bool nvtxListening();

// A range on this thread from push() to destruction (push/pop: nested ranges nest). Push only
// when nvtxListening(), so that no name is built for nobody.
class NvtxRange {
 public:
  NvtxRange() = default;
  ~NvtxRange();
  void push(const std::string& name);
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;

 private:
  bool pushed_ = false;
};

}  // namespace shardscope::engine
