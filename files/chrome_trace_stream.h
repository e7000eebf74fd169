// A Chrome trace ({"traceEvents": [...], ...}: torch.profiler's, or any tool's), plain or gzipped,
// read in chunks instead of whole: each event of its traceEvents array is parsed on its own by
// simdjson's On Demand API and handed over in file order (its fields, ChromeEvent); every other top-level member (a few
// small values: schemaVersion, distributedInfo, baseTimeNanoseconds) as a parsed value. The
// reader holds a chunk (4 MiB) and the event it is on, whatever the file's size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace shardscope::files {

// The fields of an event that say what it is, as the trace event format names them. Its strings
// are valid until the handler it is given to returns.
struct ChromeEvent {
  std::string_view name, ph, cat;
  std::string_view args;  // its args object's JSON text; empty when it has none
  std::string_view text;  // the whole event's JSON text
  bool hasName = false, hasTs = false, hasDur = false;
  double ts = 0, dur = 0;    // us
  int64_t pid = 0, tid = 0;  // a name (the profiler's own rows) is given a stable number
};

struct ChromeTraceHandlers {
  // A top-level member other than traceEvents.
  std::function<void(const std::string& key, const nlohmann::json& value)> onMember;
  // One event, counted from 1. "" to go on, or why the trace cannot be read, which ends the
  // reading with that reason.
  std::function<std::string(const ChromeEvent& event, size_t index)> onEvent;
  // An element of traceEvents that is not an object (its JSON text), counted as the events are;
  // "" to go on, or why the trace cannot be read. Unset: skipped.
  std::function<std::string(std::string_view text, size_t index)> onOtherElement;
};

// Integers of an event's args (args.Bytes, args.correlation, ...), read with simdjson.
class ChromeArgs {
 public:
  ChromeArgs();
  ~ChromeArgs();
  // For each of `keys` that the args object holds, its value, whichever way the number is
  // written, into `values` and `found`; "" or which of them holds another kind of value
  // ("\"args.Bytes\" is a string where a number belongs").
  std::string integers(std::string_view args, const std::vector<std::string_view>& keys, std::vector<int64_t>& values,
                       std::vector<bool>& found);

 private:
  struct Parser;
  std::unique_ptr<Parser> parser_;
};

// Why a Chrome trace could not be read: the kind, which callers act on (a file cut short or
// damaged is worth recording again), apart from the words, which they show.
enum class TraceProblemKind : uint8_t {
  None,
  Unreadable,     // not opened, past its size, or its gzip damaged
  Empty,          // not one byte
  NotJson,        // not JSON, at a byte the message names
  Truncated,      // it ends before its JSON does
  NoTraceEvents,  // JSON with no traceEvents array
  Refused,        // an event handler's reason
};
struct TraceProblem {
  TraceProblemKind kind = TraceProblemKind::None;
  std::string message;  // "" when kind is None; else what is wrong, to follow the file's name
};

// What was wrong reading `path` as a Chrome trace: it cannot be opened, its gzip is damaged, it
// is not JSON (at which byte), it has no traceEvents array, or an event handler's reason.
// `maxBytes`: the most the file may hold (inflated, if gzipped), `why` saying why (files::
// traceLimit); past it, the reading stops as Unreadable.
TraceProblem streamChromeTrace(const std::string& path, const ChromeTraceHandlers& handlers, size_t maxBytes = SIZE_MAX,
                               const std::string& why = "");

}  // namespace shardscope::files
