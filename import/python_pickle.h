// A Python pickle of plain values, read into a tree: what PyTorch writes with pickle.dump for its
// records (torch.cuda.memory._dump_snapshot). Dicts, lists, tuples, strings, integers up to 64
// bits, floats, booleans and None at protocols 2 to 5 (pickle.dump writes 4 or 5); bytes from
// protocol 3 on and sets (read as lists) from 4 on, as earlier protocols write those through a
// GLOBAL. An opcode that would build a Python object (GLOBAL, REDUCE, BUILD, ...) is refused,
// never run: here a pickle is data, not code. A value the pickle shares (its memo) is one node
// with several parents, so a snapshot's frames, repeated in every entry, are held once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope::trace::pickle {

struct Value {
  enum class Kind { None, Bool, Int, Float, String, Bytes, List, Tuple, Dict };
  Kind kind = Kind::None;
  bool boolean = false;
  int64_t integer = 0;
  double real = 0;
  std::string text;                           // String (UTF-8, as Python wrote it) and Bytes
  std::vector<std::shared_ptr<Value>> items;  // List and Tuple; a Dict's keys and values, alternating

  // A Dict's value under the string `key`, or null (also for a value that is not a Dict).
  const Value* get(std::string_view key) const;
  // An Int's value, or `fallback` for a value that is not one (or null).
  static int64_t intOr(const Value* v, int64_t fallback);
  // A String's text, or "" for a value that is not one (or null).
  static std::string_view textOf(const Value* v);
  bool isList() const { return kind == Kind::List || kind == Kind::Tuple; }

  // Not part of the value: how deep the tree under it goes, and whether it sits inside another
  // value already (after which nothing more may be added to it: no cycles, depth known).
  int depth = 0;
  bool placed = false;
};

using ValuePtr = std::shared_ptr<Value>;

// Nesting past this is refused: no real record nests so deep, and a tree this deep is still
// freed without exhausting the stack.
constexpr int kMaxPickleDepth = 200;
// Values (and stack entries) past this are refused: each costs about 100 bytes, however few bytes
// of the file made it, so the file's size alone does not bound the memory a read takes.
constexpr int64_t kMaxPickleValues = 24'000'000;

// The pickle's value, or null with `error` saying why: the opcode and its byte offset for one
// this reader refuses or does not know, "ends at byte N" for a file cut short.
ValuePtr readPickle(std::string_view bytes, std::string& error);

}  // namespace shardscope::trace::pickle
