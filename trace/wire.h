// Wire format between a rank process and what reads its events (the controller's pipe, a
// collector's socket, DIR/rank-R.events): a byte stream of items, each self-delimiting, so
// whatever a rank wrote before dying is readable up to its torn last item.
//  - An event is a binary frame: kFrameMark, the payload's length as a varint, then the payload: its
//    kind, a mask of the fields that differ from a default Event, and those fields as varints
//    (end and issue times relative to the begin time), a float's 8 bytes, a string's length and
//    bytes. A memory event takes about 20 bytes where its JSON line takes 75, and no allocation.
//  - Control text is a line ending in '\n': a collector hello (trace/collector_hello.h), a replay
//    header (trace/rank_event_files.h), an empty line as a heartbeat.
// Streams and files written by shardscope before binary frames carry each event as a JSON line
// (encodeEventLine); they are still read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "trace/events.h"

namespace shardscope::trace {

// No text line we write starts with this byte, and no UTF-8 text has it at all.
constexpr unsigned char kFrameMark = 0xFE;
// Larger than any event (its string is a unit's name or an error message): a longer one is damage.
constexpr uint32_t kMaxFrameBytes = 1u << 20;

void appendEventFrame(std::string& out, const Event& event);
// Nothing for a payload that is not exactly one event (damaged, or of a newer vocabulary).
std::optional<Event> decodeEventFramePayload(std::string_view payload);

// Older streams' JSON line, without its '\n'. Decoding returns nothing for a torn or foreign line.
std::string encodeEventLine(const Event& event);  // ends with '\n'
std::optional<Event> decodeEventLine(std::string_view line);

// One item of a stream as StreamSplitter gives it: a whole frame (mark and length included) or a
// line without its '\n'. Nothing for control text, a heartbeat or damage.
std::optional<Event> decodeStreamItem(std::string_view item);

// Streams written before each kind's figure had a field of its own carry one "count" whose meaning
// the kind gave: RunInfo's parameters, the dropped events of RunDone and Dropped, ClockOffset's
// uncertainty, CollectiveIssued's sequence number, an all-to-all's own part, a send's or recv's
// peer (a StepEnd's is ignored); and RunInfo's GPU memory and measured peak in `bytes` and
// `bytesOut`. placeLegacyFigures moves them to their fields; legacyCountOf writes the old shape.
int64_t legacyCountOf(const Event& event);
void placeLegacyFigures(Event& event, int64_t count);

// Whether the event's kind-specific enums (role, op, group, space) name values this vocabulary
// has: a decoded event that does not is refused, not drawn.
bool namesKnownValues(const Event& event);

// The bounds of the item that starts at `start` of `bytes`: `end` one past its last byte, `next`
// where the next one starts; `next` 0 when `bytes` holds no whole item from there.
struct StreamItemBounds {
  size_t end = 0;
  size_t next = 0;
};
StreamItemBounds nextStreamItem(std::string_view bytes, size_t start);
// Where the first item that ends at or past `from` ends, in `stream` (which starts at an item's
// start): a place to cut it so what is left still starts with a whole item. npos if none ends.
size_t itemBoundaryFrom(std::string_view stream, size_t from);

// Splits a byte stream into items across reads; keeps an unfinished item for the next feed.
class StreamSplitter {
 public:
  template <typename Fn>
  void feed(const char* data, size_t size, Fn&& onItem) {
    pending_.append(data, size);
    size_t start = 0;
    for (StreamItemBounds item; (item = nextStreamItem(pending_, start)).next != 0; start = item.next) {
      itemEnd_ += item.next - start;
      onItem(std::string_view(pending_).substr(start, item.end - start));  // no copy per item
    }
    pending_.erase(0, start);
  }

  size_t pendingBytes() const { return pending_.size(); }  // an unfinished item so far
  // Bytes of the stream through the end of the item being handed out (its '\n' included).
  uint64_t itemEnd() const { return itemEnd_; }

 private:
  std::string pending_;
  uint64_t itemEnd_ = 0;
};

}  // namespace shardscope::trace
