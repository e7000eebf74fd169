// "Who holds what": one row per rank, one column per model unit (the root, then the blocks), at
// one time (the playhead): what each rank holds of each unit — its weight shard, the gathered
// weights, full or sharded gradients, optimizer state — stacked by role, to one scale in bytes
// (the buffers a collective stages and the activations are in the timeline's lanes). Played or stepped, the gathered
// weights appear and vanish unit by unit: FSDP's accordion. Every byte comes from the recorded memory events that name
// their unit (trace::Event::unit); what no unit owns (DDP's buckets, ZeRO-1's flat buffers) is a column of its own,
// measured as the rank's total less the units'. A cell is framed while its rank computes that unit (the compute spans).
// Under --offload cpu each rank has a second row, its host memory per unit, to the host's own scale.
// Under --tp N a row is labelled with both of the rank's places, "rank 3 d1 t1": data rank 3 / N
// and tensor rank 3 % N; its cells hold its tensor-parallel slices of each unit.
#pragma once

#include <cstdint>
#include <string>

#include "ui/session_store.h"

namespace shardscope::ui {

struct HoldingsFrameStats {
  int cells = 0;               // rank x unit cells drawn
  int filledCells = 0;         // cells holding anything
  int computingCells = 0;      // cells framed because their rank computes that unit now
  int64_t bytesShown = 0;      // sum over the unit cells
  int hostCells = 0;           // --offload cpu: rank x unit cells of host memory, a row per rank
  int64_t hostBytesShown = 0;  // sum over them
  int heldCells = 0;           // --pp: ranks' micro-batches-held cells
};

// The roles a cell shows: the model states.
bool holdingsRole(trace::MemoryRole role);

// Whether any rank recorded host memory per model unit (--offload cpu, recorded by a version that
// writes the trace's `unit host memory` counters): the grid's host rows.
bool recordsHostMemoryPerUnit(const trace::RunRecording& rec);

// A column's unit name where it fits `width` pixels in the current font: "blocks.12", else "b12",
// else "12", else "" (hovering a cell names its unit), so that no label runs into the next one's.
std::string fittedUnitLabel(const std::string& name, float width);

// A row's name: "rank 3"; under --tp N both of its places in its stage's grid, "rank 3 d1 t1";
// under --pp the pipeline stages it holds too, "rank 3 s1,3".
std::string rankRowLabel(int rank, const config::RunConfig& config);

struct PipelineLanes;  // ui/pipeline_lanes.h

// Draws the grid into the current window at the cursor, `width` x `height`, for time `tNs`
// (relative to the session's origin). A pipeline run's `lanes` add a last column: the
// micro-batches whose activations each rank holds then.
void drawHoldings(const Session& session, double tNs, float width, float height, HoldingsFrameStats* stats = nullptr,
                  const PipelineLanes* lanes = nullptr);

}  // namespace shardscope::ui
