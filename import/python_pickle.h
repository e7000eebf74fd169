// A Python pickle of plain values, read into a compact tree: what PyTorch writes with pickle.dump
// for its records (torch.cuda.memory._dump_snapshot). Dicts, lists, tuples, strings, integers up
// to 64 bits, floats, booleans and None at protocols 2 to 5 (pickle.dump writes 4 or 5); bytes
// from protocol 3 on and sets (read as lists) from 4 on, as earlier protocols write those through
// a GLOBAL. An opcode that would build a Python object (GLOBAL, REDUCE, BUILD, ...) is refused,
// never run: here a pickle is data, not code.
//
// Kept lean, as a snapshot repeats the same stack frames in every one of its entries, often as
// copies that pickle's memo does not share:
//   numbers sit inline in their container (16 bytes each, no node of their own);
//   each distinct text is kept once, however many copies the pickle holds;
//   equal containers are one node: a container can no longer change once it is placed inside
//   another (the reader refuses to add to it), so there it is looked up among those placed
//   before, by its items, and an equal one is used instead; the copy's node is reused.
// A value pickle's memo shares is one node too. The tree is read only through Value, which holds
// a Document and the value's place in it.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope::import::pickle {

enum class Kind : uint8_t { None, Bool, Int, Float, String, Bytes, List, Tuple, Dict };

// How the tree holds a value, 16 bytes: a number inline, a text or a container by its index.
struct Ref {
  uint64_t bits = 0;  // Bool, Int: the integer; Float: the double's bits; String, Bytes: the text's
                      // index; List, Tuple, Dict: the container's
  Kind kind = Kind::None;
};

// A list, tuple or dict: its items (a dict's keys and values, alternating).
struct Container {
  std::vector<Ref> items;
  Kind kind = Kind::None;
  uint8_t depth = 0;             // how deep the tree under it goes (kMaxPickleDepth bounds it)
  bool placed = false;           // inside another value already: nothing more may be added to it
  bool shared = false;           // referred to from the stack or the memo more than once (never reused)
  uint32_t memoAt = UINT32_MAX;  // the memo entry that holds it, while one does
};

class Document;

// One value of a read pickle: a view into its Document, valid while that lives. A default Value
// is absent (false): what get() gives for a key a dict does not have.
class Value {
 public:
  Value() = default;
  explicit operator bool() const { return doc_ != nullptr; }
  Kind kind() const { return ref_.kind; }
  bool boolean() const { return ref_.kind == Kind::Bool && ref_.bits != 0; }
  int64_t integer() const { return static_cast<int64_t>(ref_.bits); }  // an Int's (or Bool's) value
  double real() const;
  std::string_view text() const;  // a String's or Bytes' text; "" for any other value
  bool isList() const { return ref_.kind == Kind::List || ref_.kind == Kind::Tuple; }
  // A List's or Tuple's items, or a Dict's keys and values, alternating; 0 for any other value.
  size_t size() const;
  Value operator[](size_t i) const;  // i < size()
  // A Dict's value under the string `key`; absent for a key it lacks, or a value that is no Dict.
  Value get(std::string_view key) const;
  // An Int's value, or `fallback` for a value that is not one (or is absent).
  int64_t intOr(int64_t fallback) const { return ref_.kind == Kind::Int ? integer() : fallback; }
  // The container it is: the same for values the pickle shared and for equal containers (each is
  // kept once); null for a value that is not a container.
  const void* node() const;

 private:
  friend class Document;
  Value(const Document* doc, Ref ref) : doc_(doc), ref_(ref) {}
  const Container* container() const;
  const Document* doc_ = nullptr;
  Ref ref_;
};

class Reader;

// A read pickle: its containers and texts, and the value it holds.
class Document {
 public:
  Value root() const { return Value(this, root_); }
  Value valueOf(Ref ref) const { return Value(this, ref); }
  size_t containers() const { return containers_.size() - unusedContainers_; }  // equal ones once
  size_t texts() const { return texts_.size(); }                                // distinct ones
  // About what the tree takes in memory: its containers, their items and its texts.
  size_t retainedBytes() const;

 private:
  friend class Value;
  friend class Reader;
  std::vector<Container> containers_;
  std::deque<std::string> texts_;  // a deque: the reader looks texts up by views into them
  size_t unusedContainers_ = 0;    // copies of equal ones, left empty at the end
  Ref root_;
};

using DocumentPtr = std::unique_ptr<const Document>;

// Nesting past this is refused: no real record nests so deep, and readers that walk the tree
// recursively (a Flight Recorder dump into JSON) do not exhaust the stack.
constexpr int kMaxPickleDepth = 200;
// Values (and stack entries) past this are refused: each costs up to about 50 bytes while read
// (16 in its container, a container's node and memo entry), however few bytes of the file made
// it, so the file's size alone does not bound the memory a read takes.
constexpr int64_t kMaxPickleValues = 24'000'000;

// The pickle's value, or null with `error` saying why: the opcode and its byte offset for one
// this reader refuses or does not know, "ends at byte N" for a file cut short.
DocumentPtr readPickle(std::string_view bytes, std::string& error);

}  // namespace shardscope::import::pickle
