// Names the recorded spans share (a unit, a collective's "unit|implementation", an event group's
// label, a kernel read from a profiler trace), each kept once for the process and referred to by a
// 4-byte id, so a retained span holds no string of its own (it held a std::string, 32 bytes and
// often a heap block, for a handful of distinct names). Names are few (a model's units and
// buckets, a trace's distinct kernels) and live as long as the process: ids stay valid across
// recordings, folds and the writer threads a fold hands its detail to.
//
// Thread-safe: readers of several ranks intern at once. Looking an id up takes no lock: an id is
// only known after its name was stored, and a stored name never moves.
//
// One table for the process: a module loaded with its own copy of this library (the training
// engine, engine/engine_entry.h) fills recordings the executable reads, so it is handed the
// executable's table when it is loaded, before it interns a name.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace shardscope::trace {

using NameId = uint32_t;
constexpr NameId kEmptyName = 0;  // ""

NameId internName(std::string_view name);
const std::string& nameOf(NameId id);
// Distinct names interned so far, "" included (for tests and benches).
size_t internedNames();

class NameTable;
// The table this copy of the library uses, and the handover to a loaded module's copy.
NameTable* namesInUse();
void useNames(NameTable* table);

}  // namespace shardscope::trace
