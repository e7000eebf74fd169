// Collectives read from a GPU trace's kernels, where the host's records (import/
// profiler_collectives.h) do not hold them:
//   launched before the window  an NCCL kernel that ran inside the trace's window but whose launch
//                               the trace lacks (the profiler started after the host queued it,
//                               in the step before the first recorded one): drawn, and said, but not
//                               counted in the recorded steps
//   kernels outside NCCL        a kernel whose name suggests communication
//                               (profiler::isCommunicationKernelName): part of the collective whose
//                               record launched it (it times that one on the device); a collective of
//                               its own, outside c10d, when launched outside every record and its
//                               name says which (an expert-parallel library's all-to-all); else
//                               named in the notes, seen but not recognised
#pragma once

#include <cstdint>
#include <vector>

#include "import/profiler_collectives.h"
#include "import/profiler_kernel_context.h"
#include "trace/events.h"

namespace shardscope::import {

void readKernelsLaunchedBeforeWindow(const KernelContext& kernels, std::vector<trace::Event>& out,
                                     CollectiveNotes& notes);
void readCommunicationKernels(const KernelContext& kernels, std::vector<trace::Event>& out, CollectiveNotes& notes);

}  // namespace shardscope::import
