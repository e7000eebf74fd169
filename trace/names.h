// Names the recorded spans share (a unit, a collective's "unit|implementation", an event group's
// label, a kernel read from a profiler trace), each kept once and referred to by a 4-byte id, so a
// retained span holds no string of its own (it held a std::string, 32 bytes and often a heap
// block, for a handful of distinct names).
//
// Who keeps a name: whatever holds spans that name it holds it, through a NameHolder (a rank's
// timeline in a recording, the older detail a fold hands a writer thread, a window's event group
// marks). A name no holder holds any longer is let go, and its id may later name another: a window
// that opens and closes many traces (each with its own kernels' names) keeps only the names of
// those still open. A name interned with internName, outside any holder, is kept for the process.
// An id is valid while a holder holds it (or for the process): spans outlive their recording only
// where they take its names with them.
//
// Thread-safe: readers of several ranks intern at once. Looking an id up takes no lock: an id is
// only known after its name was stored, and a name does not move or change while it is held.
//
// One table for the process: a module loaded with its own copy of this library (the training
// engine, engine/engine_entry.h) fills recordings the executable reads, so it is handed the
// executable's table when it is loaded, before it interns a name.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope::trace {

using NameId = uint32_t;
constexpr NameId kEmptyName = 0;  // "", kept for the process

// `name`'s id, the name kept for the process.
NameId internName(std::string_view name);
const std::string& nameOf(NameId id);
// Distinct names kept now, "" included, and whether `name` is one (for tests and benches).
size_t internedNames();
bool nameKept(std::string_view name);

// A set of names held: each is kept while some holder holds it. Copies hold the same names; not
// thread-safe itself (as the spans it goes with).
class NameHolder {
 public:
  NameHolder() = default;
  NameHolder(const NameHolder& other);
  NameHolder& operator=(const NameHolder& other);
  NameHolder(NameHolder&& other) noexcept;
  NameHolder& operator=(NameHolder&& other) noexcept;
  ~NameHolder();

  // `name`'s id, held by this.
  NameId intern(std::string_view name);
  // Holds `id` too: one another holder holds now (a span taken from it).
  void hold(NameId id);
  bool holds(NameId id) const { return id < held_.size() && held_[id]; }
  size_t size() const { return ids_.size(); }

 private:
  friend class NameTable;
  void add(NameId id);
  std::vector<NameId> ids_;  // the names held
  std::vector<bool> held_;   // the same, by id
};

class NameTable;
// The table this copy of the library uses, and the handover to a loaded module's copy.
NameTable* namesInUse();
void useNames(NameTable* table);

}  // namespace shardscope::trace
