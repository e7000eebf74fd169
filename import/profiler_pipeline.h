// torch.distributed.pipelining's actions in a rank's torch.profiler trace, as PyTorch 2.11 names
// them in record_function spans:
//   "Forward i", "Backward i"  ScheduleGPipe's, per micro-batch i; they name no stage (a rank's is its
//                             index in the pipeline group its trace's pg_config names, else its
//                             rank, as in a job of pipeline ranks only: profiler::singleStageOf). Schedule1F1B records
//                             none: its actions are read from the order of its operators and transfers
//                             (import/profiler_pipeline_inferred.h).
//   "PP:<action>"             the multi-stage runtime's (ScheduleInterleaved1F1B, the zero-bubble
//                             schedules), each action as the schedule IR writes it: "1F3", "0I2",
//                             "1W0", "0B1"; its transfers ("0SEND_F1") are c10d's sends and receives,
//                             read as such
//   "PP:(0F3;3B1)OVERLAP_F_B" ScheduleDualPipeV's pair, F then B in one span: two actions, split
//                             where autograd's first function in the span began (the B's start)
// Each becomes a compute span of "stage S" and micro-batch m (F forward; B, I and W backward) and an
// event group named as shardscope's own schedules name their actions, so that the summary's bubble,
// the timeline's pipeline lanes and the Schedule tab read the job as they read a --pp run.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/run_config.h"
#include "import/profiler_trace_index.h"
#include "trace/events.h"

namespace shardscope::import {

// The rank's pipeline actions as compute spans (the host's: a GPU trace's kernels take their
// phase from them). Returns whether any was a backward (the job's backward is then read from them,
// not from autograd's spans, which run inside them).
bool readPipelineCompute(const profiler::RankTrace& trace, std::vector<trace::Event>& out);
// And as event groups, one at the start of each; for each step with actions, an optimizer group
// where it steps its optimizer (its last action ends there) and one training step's span (what
// its bubble is taken over, as the engine records its own), on the steps' clock
// (profiler::stepWindow). Returns whether the actions were inferred from the rank's order (its
// schedule named none: import/profiler_pipeline_inferred.h).
bool readPipelineMarks(const profiler::RankTrace& trace, std::vector<trace::Event>& out);

// The job's pipeline as every traced rank's action groups show it: P (the pipeline ranks: the
// size of the pipeline group a trace named, `pipelineGroupSize` (0: none), else the stages / V
// where every rank was traced, else the world; the world's other ranks are each stage's
// data-parallel ones), V (the most stages a rank ran), M (the most micro-batches) and the schedule
// their labels and stages name. Nothing unless every traced rank ran actions and each stage's
// ranks are one block of the world (torchtitan's (pp, dp) mesh, as --pp lays them out). `ranks`:
// the events of each rank (empty: not traced). Sets config.pp, stagesPerRank, microbatches and schedule; returns how
// the title says it.
std::optional<std::string> recognisePipeline(const std::vector<std::vector<trace::Event>>& ranks, int pipelineGroupSize,
                                             config::RunConfig& config);

}  // namespace shardscope::import
