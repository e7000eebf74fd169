// `shardscope estimate --params`: model-state memory per GPU for a model of a given size, and its
// inverses (the fewest GPUs that hold it, the largest model so many GPUs hold), as tables or JSON;
// every figure a PREDICTION (the seed documents' memory tables).
#pragma once

#include <cstdio>
#include <optional>
#include <string>

#include "estimate/activation_memory.h"
#include "estimate/model_state_table.h"

namespace shardscope::estimate {

// What --arch and its options asked, named in the header's line on activations (c.activationBytes
// holds what they come to).
struct ActivationAsked {
  std::string arch;  // as typed: a preset's name or layers,hidden,heads,sequence
  std::optional<ArchitecturePreset> preset;
  int microBatch = 1;
  std::string recompute = "none";
  std::string precision = "bf16";
};

// Each prints its table to `out`, or with `json` the same figures as JSON (schema
// shardscope.estimate/1).
void printModelStateTable(std::FILE* out, const ModelStateCase& c, const ActivationAsked& asked, bool json);
void printFewestGpus(std::FILE* out, const ModelStateCase& c, const ActivationAsked& asked, bool json);
void printLargestModel(std::FILE* out, const ModelStateCase& c, bool json);

}  // namespace shardscope::estimate
