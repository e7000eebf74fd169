#include "files/unfinished_outputs.h"

#include <unistd.h>

#include <atomic>
#include <iterator>

namespace shardscope::files {

// A slot's states. Only a slot that is Held (or Written) is read by a handler; a writer claims a
// Free one (or an announced one to replace) by moving it to Filling first. A handler moves a
// temporary's slot from Held to Removing before it reads the path, so no thread frees and refills
// the slot under it (the process is ending: the slot stays so).
enum SlotState : int { Free = 0, Filling = 1, Held = 2, Written = 3, Removing = 4 };

struct UnfinishedOutputs {
  static constexpr size_t kPathBytes = 4096;  // PATH_MAX: a longer path cannot be opened anyway
  static constexpr size_t kWhatBytes = 32;
  struct TemporarySlot {
    std::atomic<int> state{Free};
    char path[kPathBytes];
  };
  struct OutputSlot {  // Held until written whole, then Written
    std::atomic<int> state{Free};
    char what[kWhatBytes];
    char path[kPathBytes];
  };
  // A run streams its trace and CSV while it writes its summary; a window or a compare has a few
  // more at once. The outputs: a compare's per-strategy traces and CSVs, plus its summary.
  TemporarySlot temporaries[32];
  OutputSlot outputs[64];
  std::atomic<bool> ending{false};  // a handler removed the temporaries: the process is ending
  std::atomic<int> unlisted{0};     // outputs announced past the table's room
};

namespace {

UnfinishedOutputs gOwn;
std::atomic<UnfinishedOutputs*> gInUse{&gOwn};

UnfinishedOutputs& tables() { return *gInUse.load(); }

bool copyInto(char* to, size_t size, const std::string& from) {
  if (from.size() >= size) return false;
  from.copy(to, from.size());
  to[from.size()] = '\0';
  return true;
}

// Appends `text` to out[0, size - 1), keeping out NUL-terminated; async-signal-safe.
void append(char* out, size_t size, size_t& at, const char* text) {
  while (*text && at + 1 < size) out[at++] = *text++;
  out[at] = '\0';
}

// " what path, what path" for each announced output in `state`; the count of them.
int listOutputs(char* out, size_t size, size_t& at, int state) {
  int listed = 0;
  for (const auto& slot : tables().outputs) {
    if (slot.state.load() != state) continue;
    append(out, size, at, listed++ == 0 ? " " : ", ");
    append(out, size, at, slot.what);
    append(out, size, at, " ");
    append(out, size, at, slot.path);
  }
  return listed;
}

int countOutputs(int state) {
  int n = 0;
  for (const auto& slot : tables().outputs) n += slot.state.load() == state;
  return n;
}

}  // namespace

UnfinishedOutputs* unfinishedOutputsInUse() { return gInUse.load(); }

void useUnfinishedOutputs(UnfinishedOutputs* shared) {
  if (shared) gInUse.store(shared);
}

void announceOutputs(const std::vector<std::pair<std::string, std::string>>& announced) {
  auto& outputs = tables().outputs;
  size_t next = 0;
  tables().unlisted.store(0);
  for (const auto& [what, path] : announced) {
    if (path.empty()) continue;
    if (next == std::size(outputs)) {
      tables().unlisted.fetch_add(1);  // counted and said, not left off in silence
      continue;
    }
    auto& slot = outputs[next++];
    slot.state.store(Filling);
    if (copyInto(slot.what, UnfinishedOutputs::kWhatBytes, what) &&
        copyInto(slot.path, UnfinishedOutputs::kPathBytes, path)) {
      slot.state.store(Held);
    }
  }
  for (; next < std::size(outputs); ++next) outputs[next].state.store(Free);
}

int rememberTemporary(const std::string& path) {
  if (path.size() >= UnfinishedOutputs::kPathBytes) return -1;
  auto& shared = tables();
  for (int i = 0; i < static_cast<int>(std::size(shared.temporaries)); ++i) {
    auto& slot = shared.temporaries[i];
    int expected = Free;
    if (!slot.state.compare_exchange_strong(expected, Filling)) continue;
    copyInto(slot.path, UnfinishedOutputs::kPathBytes, path);
    slot.state.store(Held);
    // Held before `ending` is read, and a handler sets `ending` before it reads the slots: one of
    // the two sees the other, so a file made while a handler runs on another thread is removed.
    if (shared.ending.load()) ::unlink(slot.path);
    return i;
  }
  return -1;
}

void forgetTemporary(int slot) {
  auto& temporaries = tables().temporaries;
  if (slot < 0 || slot >= static_cast<int>(std::size(temporaries))) return;
  int held = Held;  // a handler removing it keeps it (Removing)
  temporaries[slot].state.compare_exchange_strong(held, Free);
}

void outputWritten(const std::string& path) {
  for (auto& slot : tables().outputs) {
    int held = Held;
    if (slot.state.load() == Held && path == slot.path) slot.state.compare_exchange_strong(held, Written);
  }
}

void removeTemporariesNow() {
  auto& shared = tables();
  shared.ending.store(true);
  for (auto& slot : shared.temporaries) {
    int held = Held;
    if (slot.state.compare_exchange_strong(held, Removing)) ::unlink(slot.path);
  }
}

size_t describeAnnouncedOutputs(char* out, size_t size) {
  if (size == 0) return 0;
  size_t at = 0;
  out[0] = '\0';
  if (countOutputs(Held) + countOutputs(Written) == 0) return 0;
  append(out, size, at, "Kept:");
  if (listOutputs(out, size, at, Written) == 0) append(out, size, at, " nothing");
  append(out, size, at, ".");
  if (countOutputs(Held) > 0) {
    append(out, size, at, " Not written (no partial file is left; a file already at such a path is as it was):");
    listOutputs(out, size, at, Held);
    append(out, size, at, ".");
  }
  if (const int more = tables().unlisted.load(); more > 0) {
    char digits[12];
    size_t n = sizeof digits - 1;
    digits[n] = '\0';
    for (int left = more; left > 0 && n > 0; left /= 10) digits[--n] = static_cast<char>('0' + left % 10);
    append(out, size, at, " ");
    append(out, size, at, digits + n);
    append(out, size, at, " more outputs were past what it can follow: some may be missing.");
  }
  return at;
}

}  // namespace shardscope::files
