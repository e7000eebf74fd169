// A job's events as per-rank files: `shardscope worker --trace-dir DIR` under torchrun (or srun,
// mpirun) has each rank write its event stream, the very bytes it would send a controller
// (trace/wire.h), to DIR/rank-R.events, and rank 0 the run's configuration to DIR/config.json.
// `shardscope view DIR` merges them into one recording. Its items (frames and lines) are
// self-delimiting, so a rank that died mid-run leaves a readable file: all but its torn last item.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "trace/rank_clock.h"
#include "trace/trace_reader.h"

namespace shardscope::trace {

// DIR/rank-R{part}.events (part: "" or ".after-collector", what a rank wrote once its collector was
// lost) and DIR/config.json.
std::string rankEventFileName(const std::string& dir, int rank, const std::string& part = "");
std::string rankEventConfigName(const std::string& dir);

// What a recording keeps of a rank's stream (a controller merges these; a rank's wait at the step
// gate, its placement, errors and clock are said otherwise).
bool isRecordedEvent(const Event& e);
// Adds `shiftNs` to the event's times (onto rank 0's clock: Note [clock alignment] in trace/rank_clock.h).
void shiftEventTimes(Event& e, int64_t shiftNs);
// The event put on rank 0's clock by its rank's readings, at its own (begin) time.
void shiftOntoRank0(Event& e, const RankClock& clock);

// The first line of DIR/rank-R.after-collector.events when the rank wrote again what its collector
// had not confirmed keeping (engine/recording/unconfirmed_bytes.h): where in its stream (the bytes after its
// hello, as the collector's rank-R.events holds them) the next item starts. The reader takes
// rank-R.events up to there and the rest from the rank's own file.
std::string replayHeaderLine(uint64_t streamOffset);
std::optional<uint64_t> decodeReplayHeader(const std::string& line);

// Whether `dir` is a directory holding at least one rank-R.events file.
bool isRankEventDirectory(const std::string& dir);
// Whether `path` is a directory at all (`view` reads one as a job's --trace-dir).
bool isDirectory(const std::string& path);

// The ranks' files merged: each rank's events in time order, as a controller adds them, on rank 0's
// clock (Note [clock alignment] in trace/rank_clock.h; `clocks` says which ranks were shifted, by
// how much, to within what). The ranks
// are those config.json's world names (or one past the highest file's). What a file could not
// give (a rank without a file, items that were not events) is said in `note`; an unreadable
// directory, or files more than memory can hold the recording of (files/host_memory.h), in `error`.
LoadedTrace loadRankEventFiles(const std::string& dir);

}  // namespace shardscope::trace
