// What a second Ctrl-C can still do for a command's outputs when it ends the process at once, from
// its signal handler: remove the temporary files of the outputs not yet renamed into place
// (files/output_file.h) and say which outputs were kept and which were not. A handler may make
// only async-signal-safe calls (no allocation, no lock, no stdio), so all it needs sits in fixed
// tables filled beforehand: each temporary file's path while it exists, and the outputs the
// command means to write, by what they are. Slots change state with atomics only.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace shardscope::files {

// The tables. The engine is a module with its own copy of this library (engine/engine_entry.h):
// the executable hands it its tables as it loads it, so that its handler sees the files the
// engine writes. Before anything else is called; the tables then live as long as the process.
struct UnfinishedOutputs;
UnfinishedOutputs* unfinishedOutputsInUse();
void useUnfinishedOutputs(UnfinishedOutputs* tables);

// The outputs a command means to write, as {what, path}: {"summary", "s.json"}. An empty path is
// left out. Replaces what was announced before. Not from a signal handler.
void announceOutputs(const std::vector<std::pair<std::string, std::string>>& outputs);

// For OutputFile. A temporary file exists at `path` until forgotten: the slot to forget it by, or
// -1 (the table is full, or the path too long: that file is then not removed by a handler).
int rememberTemporary(const std::string& path);
void forgetTemporary(int slot);
// An output is now whole at `path` (renamed into place, or written to a device).
void outputWritten(const std::string& path);

// Async-signal-safe, for a handler about to end the process. Removes every temporary file
// remembered; one that another thread makes after this is removed as it is made.
void removeTemporariesNow();
// Writes into `out` (NUL-terminated, clipped to `size`) what became of the announced outputs:
// "Kept: trace t.json. Not written (no partial file is left; a file already at such a path is as
// it was): summary s.json." Returns the length written; 0 when nothing was announced.
size_t describeAnnouncedOutputs(char* out, size_t size);

}  // namespace shardscope::files
