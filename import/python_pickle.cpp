#include "import/python_pickle.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace shardscope::import::pickle {

namespace {

bool isContainer(Kind kind) { return kind == Kind::List || kind == Kind::Tuple || kind == Kind::Dict; }

}  // namespace

double Value::real() const {
  double d = 0;
  if (ref_.kind == Kind::Float) std::memcpy(&d, &ref_.bits, sizeof d);
  return d;
}

std::string_view Value::text() const {
  if (ref_.kind != Kind::String && ref_.kind != Kind::Bytes) return "";
  return doc_->texts_[ref_.bits];
}

const Container* Value::container() const {
  return doc_ && isContainer(ref_.kind) ? &doc_->containers_[ref_.bits] : nullptr;
}

size_t Value::size() const {
  const Container* c = container();
  return c ? c->items.size() : 0;
}

Value Value::operator[](size_t i) const { return Value(doc_, container()->items[i]); }

Value Value::get(std::string_view key) const {
  if (ref_.kind != Kind::Dict) return {};
  const auto& items = container()->items;
  for (size_t i = 0; i + 1 < items.size(); i += 2) {
    if (items[i].kind == Kind::String && doc_->texts_[items[i].bits] == key) return Value(doc_, items[i + 1]);
  }
  return {};
}

const void* Value::node() const { return container(); }

size_t Document::retainedBytes() const {
  size_t bytes = containers_.capacity() * sizeof(Container);
  for (const auto& c : containers_) bytes += c.items.capacity() * sizeof(Ref);
  for (const auto& t : texts_) bytes += sizeof(std::string) + (t.capacity() > 15 ? t.capacity() + 1 : 0);
  return bytes;
}

namespace {

constexpr uint32_t kNoMemo = UINT32_MAX;
// A container of more items than this is not looked up among the others (a snapshot's history of
// entries, say): none has an equal, and hashing it would cost a pass over it.
constexpr size_t kMaxSharedItems = 4096;

// The opcodes that build objects through Python code, by name, for the refusal.
const char* objectOpcodeName(unsigned char op) {
  switch (op) {
    case 'c':
      return "GLOBAL";
    case 0x93:
      return "STACK_GLOBAL";
    case 'R':
      return "REDUCE";
    case 'b':
      return "BUILD";
    case 'i':
      return "INST";
    case 'o':
      return "OBJ";
    case 0x81:
      return "NEWOBJ";
    case 0x92:
      return "NEWOBJ_EX";
    case 'P':
      return "PERSID";
    case 'Q':
      return "BINPERSID";
    case 0x82:
    case 0x83:
    case 0x84:
      return "EXT";
    case 0x97:
    case 0x98:
      return "out-of-band buffer";
    default:
      return nullptr;
  }
}

// Protocol 0's text opcodes (numbers and memo indexes written as text): never in a pickle that
// pickle.dump writes by default (protocol 4 or 5).
bool isTextOpcode(unsigned char op) { return op != 0 && std::strchr("ILSVFpg", op) != nullptr; }

// Containers by their kind and items: numbers by value, texts and containers by index (each
// already kept once, so equal ones have one index).
struct SameItems {
  const std::vector<Container>* containers;

  size_t operator()(uint32_t id) const {
    const Container& c = (*containers)[id];
    uint64_t h = 0x9e3779b97f4a7c15ULL * (static_cast<uint64_t>(c.kind) + 1);
    for (const Ref& r : c.items) {
      h ^= r.bits + 0x9e3779b97f4a7c15ULL * (static_cast<uint64_t>(r.kind) + 1) + (h << 6) + (h >> 2);
    }
    return static_cast<size_t>(h ^ (h >> 31));
  }

  bool operator()(uint32_t a, uint32_t b) const {
    const Container& x = (*containers)[a];
    const Container& y = (*containers)[b];
    return x.kind == y.kind &&
           std::equal(x.items.begin(), x.items.end(), y.items.begin(), y.items.end(),
                      [](const Ref& p, const Ref& q) { return p.kind == q.kind && p.bits == q.bits; });
  }
};

}  // namespace

// Runs the pickle's opcodes on a stack, as Python's unpickler does, building the tree in `doc`.
class Reader {
 public:
  Reader(std::string_view bytes, Document& doc)
      : bytes_(bytes), doc_(doc), settled_(64, SameItems{&doc.containers_}, SameItems{&doc.containers_}) {}

  bool run(std::string& error) {
    while (error_.empty()) {
      if (at_ >= bytes_.size()) {
        fail("ends at byte " + std::to_string(at_) +
             " before its STOP opcode: the file was cut short (written "
             "again, or copied whole)");
        break;
      }
      const size_t opcodeAt = at_;
      const auto op = static_cast<unsigned char>(bytes_[at_++]);
      if (op == '.') {
        if (stack_.empty()) {
          fail("has an empty stack at its STOP (byte " + std::to_string(opcodeAt) + ")");
          break;
        }
        doc_.root_ = stack_.back();
        doc_.unusedContainers_ = unused_.size();
        return true;
      }
      if (!step(op)) {
        if (error_.empty()) fail("cannot be read");
        error_ += " (opcode at byte " + std::to_string(opcodeAt) + ")";
      }
    }
    error = error_;
    return false;
  }

 private:
  std::string_view bytes_;
  size_t at_ = 0;
  Document& doc_;
  std::vector<Ref> stack_;
  std::vector<size_t> marks_;  // stack sizes at each MARK
  // The memo: its entries in order (pickle.dump numbers them 0, 1, 2, ...), any others by index.
  // An entry in order is 8 bytes (a snapshot's memo has an entry for each of its containers and
  // texts, copies included): a text or container by its index, a number (never memoized by
  // pickle.dump) by its place in memoNumbers_.
  struct MemoSlot {
    uint32_t index = 0;
    Kind kind = Kind::None;
  };
  std::vector<MemoSlot> memo_;
  std::vector<uint64_t> memoNumbers_;
  std::unordered_map<uint64_t, Ref> farMemo_;
  std::unordered_map<std::string_view, uint64_t> textIds_;  // views into doc_.texts_
  // The containers placed inside others, each the one kept of those equal to it.
  std::unordered_set<uint32_t, SameItems, SameItems> settled_;
  std::vector<uint32_t> unused_;  // copies' nodes, for the next containers made
  int64_t made_ = 0;              // values made so far
  std::string error_;

  bool fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
    return false;
  }

  Container& at(Ref r) { return doc_.containers_[r.bits]; }

  bool take(size_t n, std::string_view& out) {
    if (n > bytes_.size() - at_) {
      return fail("ends at byte " + std::to_string(bytes_.size()) + " inside a value " + std::to_string(n) +
                  " bytes long: the file was cut short");
    }
    out = bytes_.substr(at_, n);
    at_ += n;
    return true;
  }

  bool unsignedLE(size_t n, uint64_t& out) {
    std::string_view b;
    if (!take(n, b)) return false;
    out = 0;
    for (size_t i = n; i-- > 0;) out = (out << 8) | static_cast<unsigned char>(b[i]);
    return true;
  }

  Ref scalar(Kind kind, uint64_t bits) {
    ++made_;
    return Ref{bits, kind};
  }

  Ref container(Kind kind) {
    ++made_;
    uint32_t id = 0;
    if (!unused_.empty()) {
      id = unused_.back();
      unused_.pop_back();
    } else {
      id = static_cast<uint32_t>(doc_.containers_.size());
      doc_.containers_.emplace_back();
    }
    doc_.containers_[id].kind = kind;
    return Ref{id, kind};
  }

  bool push(Ref v) {
    if (made_ + static_cast<int64_t>(stack_.size()) > kMaxPickleValues) {
      return fail("holds more than " + std::to_string(kMaxPickleValues) +
                  " values, more than shardscope reads: record a shorter history");
    }
    stack_.push_back(v);
    return true;
  }

  bool pushInt(int64_t i) { return push(scalar(Kind::Int, static_cast<uint64_t>(i))); }

  // A container the stack or memo holds once more: its node is never reused for another.
  Ref sharing(Ref v) {
    if (isContainer(v.kind)) at(v).shared = true;
    return v;
  }

  std::optional<Ref> pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) {
      fail("takes a value from an empty stack");
      return std::nullopt;
    }
    const Ref v = stack_.back();
    stack_.pop_back();
    return v;
  }

  std::optional<Ref> top() {
    if (stack_.empty()) {
      fail("reads the top of an empty stack");
      return std::nullopt;
    }
    return stack_.back();
  }

  // The values since the last MARK, which is dropped.
  bool popMark(std::vector<Ref>& out) {
    if (marks_.empty()) return fail("closes a MARK it never opened");
    const size_t from = marks_.back();
    marks_.pop_back();
    out.assign(stack_.begin() + static_cast<std::ptrdiff_t>(from), stack_.end());
    stack_.resize(from);
    return true;
  }

  // `copy` equals `kept`, placed before it: the memo's entry for it now names `kept`, and its node
  // serves the next container made. Only for a copy placed for the first time that the memo holds
  // at most once and the stack did not copy: then nothing else refers to it.
  void reuse(Ref copy, Ref kept) {
    Container& c = at(copy);
    if (c.memoAt != kNoMemo) memo_[c.memoAt] = slotOf(kept);
    c = Container{};
    unused_.push_back(static_cast<uint32_t>(copy.bits));
  }

  // `child`, placed inside another value and so never to change again: the equal container kept
  // before it where there is one, else itself, kept from now on.
  Ref settle(Ref child) {
    Container& c = at(child);
    const bool first = !c.placed;
    c.placed = true;
    if (c.items.size() > kMaxSharedItems) return child;
    const auto [kept, inserted] = settled_.insert(static_cast<uint32_t>(child.bits));
    if (inserted || *kept == child.bits) return child;
    const Ref equal{*kept, child.kind};
    if (first && !c.shared) reuse(child, equal);
    return equal;
  }

  // `child` goes inside `parent`; after this nothing more may be added to `child`.
  bool place(Ref child, Ref parent) {
    if (isContainer(child.kind) && child.bits == parent.bits) return fail("puts a value inside itself");
    if (at(parent).placed) return fail("adds to a value already inside another");
    int childDepth = 0;
    if (isContainer(child.kind)) {
      childDepth = at(child).depth;
      child = settle(child);
    }
    Container& p = at(parent);
    const int depth = std::max<int>(p.depth, childDepth + 1);
    if (depth > kMaxPickleDepth) return fail("nests deeper than " + std::to_string(kMaxPickleDepth) + " levels");
    p.depth = static_cast<uint8_t>(depth);
    p.items.push_back(child);
    return true;
  }

  bool placeAll(const std::vector<Ref>& values, Ref parent) {
    // A dict or tuple is most often filled at once: then it holds no room it never uses.
    if (auto& items = at(parent).items; items.empty()) items.reserve(values.size());
    for (const Ref& v : values) {
      if (!place(v, parent)) return false;
    }
    return true;
  }

  std::optional<Ref> topContainer(Kind kind) {
    auto c = top();
    if (c && c->kind != kind) {
      fail(std::string("adds items to a value that is not a ") + (kind == Kind::Dict ? "dict" : "list"));
      return std::nullopt;
    }
    return c;
  }

  bool appendItems(const std::vector<Ref>& values) {
    auto list = topContainer(Kind::List);
    return list && placeAll(values, *list);
  }

  bool setItems(const std::vector<Ref>& values) {
    if (values.size() % 2 != 0) return fail("sets a dict item without its value");
    auto dict = topContainer(Kind::Dict);
    return dict && placeAll(values, *dict);
  }

  bool tupleOf(const std::vector<Ref>& values, Kind kind = Kind::Tuple) {
    const Ref t = container(kind);
    return placeAll(values, t) && push(t);
  }

  bool tupleOfLast(size_t n) {
    if (stack_.size() < n || (!marks_.empty() && stack_.size() - n < marks_.back()))
      return fail("builds a tuple from an empty stack");
    const std::vector<Ref> values(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
    stack_.resize(stack_.size() - n);
    return tupleOf(values);
  }

  // A String's or Bytes' text: each distinct one kept once.
  bool text(size_t lengthBytes, Kind kind) {
    uint64_t n = 0;
    std::string_view b;
    if (!unsignedLE(lengthBytes, n) || !take(n, b)) return false;
    auto found = textIds_.find(b);
    if (found == textIds_.end()) {
      doc_.texts_.emplace_back(b);
      found = textIds_.emplace(doc_.texts_.back(), doc_.texts_.size() - 1).first;
    }
    return push(scalar(kind, found->second));
  }

  // LONG1 / LONG4: a little-endian two's complement integer of `lengthBytes` bytes' length.
  bool longInt(size_t lengthBytes) {
    uint64_t n = 0;
    std::string_view b;
    if (!unsignedLE(lengthBytes, n) || !take(n, b)) return false;
    if (n == 0) return pushInt(0);
    const bool negative = static_cast<unsigned char>(b[n - 1]) & 0x80;
    // Bytes past the eighth may only repeat the sign.
    for (size_t i = 8; i < n; ++i) {
      if (static_cast<unsigned char>(b[i]) != (negative ? 0xff : 0x00))
        return fail("holds an integer wider than 64 bits");
    }
    uint64_t u = negative ? ~uint64_t{0} : 0;
    for (size_t i = std::min<uint64_t>(n, 8); i-- > 0;) {
      u = (u << 8) | static_cast<unsigned char>(b[i]);
    }
    if (n < 8) {
      const int bits = static_cast<int>(n) * 8;
      u &= (uint64_t{1} << bits) - 1;
      if (negative) u |= ~uint64_t{0} << bits;
    }
    if (n > 8 && ((u >> 63) != 0) != negative) return fail("holds an integer wider than 64 bits");
    return pushInt(static_cast<int64_t>(u));
  }

  // Texts and containers number fewer than kMaxPickleValues: their indexes fit 32 bits.
  MemoSlot slotOf(Ref v) {
    if (isContainer(v.kind) || v.kind == Kind::String || v.kind == Kind::Bytes)
      return {static_cast<uint32_t>(v.bits), v.kind};
    memoNumbers_.push_back(v.bits);
    return {static_cast<uint32_t>(memoNumbers_.size() - 1), v.kind};
  }

  Ref refOf(MemoSlot slot) const {
    const bool byIndex = isContainer(slot.kind) || slot.kind == Kind::String || slot.kind == Kind::Bytes;
    return {byIndex ? slot.index : memoNumbers_[slot.index], slot.kind};
  }

  bool memoGet(uint64_t index) {
    if (index < memo_.size()) return push(sharing(refOf(memo_[index])));
    const auto found = farMemo_.find(index);
    if (found == farMemo_.end())
      return fail("refers to memo entry " + std::to_string(index) + ", which it never stored");
    return push(sharing(found->second));
  }

  bool memoPut(uint64_t index) {
    auto v = top();
    if (!v) return false;
    if (index > memo_.size()) {
      farMemo_[index] = sharing(*v);
      return true;
    }
    if (index == memo_.size()) {
      memo_.push_back(slotOf(*v));
    } else {
      const Ref old = refOf(memo_[index]);
      if (isContainer(old.kind) && at(old).memoAt == index) at(old).memoAt = kNoMemo;
      memo_[index] = slotOf(*v);
    }
    if (isContainer(v->kind)) {
      Container& c = at(*v);
      if (c.memoAt == kNoMemo && index < kNoMemo)
        c.memoAt = static_cast<uint32_t>(index);
      else
        c.shared = true;
    }
    return true;
  }

  // Opcodes that push a number, a string or None, or move the stack; nothing for any other.
  std::optional<bool> valueStep(unsigned char op) {
    uint64_t n = 0;
    std::string_view b;
    std::vector<Ref> values;
    switch (op) {
      case 0x80:  // PROTO
        if (!unsignedLE(1, n)) return false;
        if (n > 5) return fail("is pickle protocol " + std::to_string(n) + "; shardscope reads protocols 2 to 5");
        return true;
      case 0x95:
        return unsignedLE(8, n);  // FRAME: a length this reader has no use for
      case '(':
        marks_.push_back(stack_.size());
        return true;
      case '0':
        return pop().has_value();
      case '1':
        return popMark(values);
      case '2': {
        auto v = top();
        return v && push(sharing(*v));
      }
      case 'N':
        return push(scalar(Kind::None, 0));
      case 0x88:
      case 0x89:
        return push(scalar(Kind::Bool, op == 0x88 ? 1 : 0));
      case 'J':
        return unsignedLE(4, n) && pushInt(static_cast<int32_t>(static_cast<uint32_t>(n)));
      case 'K':
        return unsignedLE(1, n) && pushInt(static_cast<int64_t>(n));
      case 'M':
        return unsignedLE(2, n) && pushInt(static_cast<int64_t>(n));
      case 0x8a:
        return longInt(1);
      case 0x8b:
        return longInt(4);
      case 'G': {
        if (!take(8, b)) return false;
        uint64_t u = 0;
        for (char c : b) u = (u << 8) | static_cast<unsigned char>(c);  // big-endian: the double's bits
        return push(scalar(Kind::Float, u));
      }
      case 0x8c:
        return text(1, Kind::String);  // SHORT_BINUNICODE
      case 'X':
        return text(4, Kind::String);  // BINUNICODE
      case 0x8d:
        return text(8, Kind::String);  // BINUNICODE8
      case 'U':
        return text(1, Kind::String);  // SHORT_BINSTRING (protocol 1's str)
      case 'T':
        return text(4, Kind::String);  // BINSTRING
      case 'C':
        return text(1, Kind::Bytes);  // SHORT_BINBYTES
      case 'B':
        return text(4, Kind::Bytes);  // BINBYTES
      case 0x8e:
        return text(8, Kind::Bytes);  // BINBYTES8
      case 0x96:
        return text(8, Kind::Bytes);  // BYTEARRAY8 (protocol 5's in-band bytearray)
      default:
        return std::nullopt;
    }
  }

  // Opcodes that build containers or use the memo; nothing for any other.
  std::optional<bool> containerStep(unsigned char op) {
    uint64_t n = 0;
    std::vector<Ref> values;
    switch (op) {
      case '}':
        return push(container(Kind::Dict));
      case ']':
        return push(container(Kind::List));
      case ')':
        return push(container(Kind::Tuple));
      case 0x8f:
        return push(container(Kind::List));  // EMPTY_SET: a set is read as a list
      case 'd':
        return popMark(values) && push(container(Kind::Dict)) && setItems(values);
      case 'l':
        return popMark(values) && tupleOf(values, Kind::List);
      case 't':
        return popMark(values) && tupleOf(values);
      case 0x91:
        return popMark(values) && tupleOf(values, Kind::List);  // FROZENSET
      case 0x85:
        return tupleOfLast(1);
      case 0x86:
        return tupleOfLast(2);
      case 0x87:
        return tupleOfLast(3);
      case 'a': {
        auto v = pop();
        return v && appendItems({*v});
      }
      case 'e':
      case 0x90:
        return popMark(values) && appendItems(values);  // APPENDS, ADDITEMS
      case 's': {
        auto value = pop();
        auto key = pop();
        return value && key && setItems({*key, *value});
      }
      case 'u':
        return popMark(values) && setItems(values);
      case 0x94:
        return memoPut(memo_.size());  // MEMOIZE
      case 'q':
        return unsignedLE(1, n) && memoPut(n);  // BINPUT
      case 'r':
        return unsignedLE(4, n) && memoPut(n);  // LONG_BINPUT
      case 'h':
        return unsignedLE(1, n) && memoGet(n);  // BINGET
      case 'j':
        return unsignedLE(4, n) && memoGet(n);  // LONG_BINGET
      default:
        return std::nullopt;
    }
  }

  bool step(unsigned char op) {
    if (auto done = valueStep(op)) return *done;
    if (auto done = containerStep(op)) return *done;
    return refuseOpcode(op);
  }

  // Why `op` is not read: an object, protocol 0's text, or no opcode at all.
  bool refuseOpcode(unsigned char op) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", op);
    if (const char* name = objectOpcodeName(op)) {
      return fail(std::string("builds a Python object (") + name +
                  "): shardscope reads pickles of plain values only "
                  "(dicts, lists, strings, numbers), as torch.cuda.memory._dump_snapshot writes them");
    }
    if (isTextOpcode(op)) {
      return fail(std::string("uses protocol 0's text opcode '") + static_cast<char>(op) +
                  "': write it with pickle protocol 2 or later (pickle.dump's default)");
    }
    return fail(std::string("has opcode ") + hex +
                ", which no pickle protocol up to 5 has: not a pickle, or a damaged one");
  }
};

DocumentPtr readPickle(std::string_view bytes, std::string& error) {
  error.clear();
  if (bytes.empty()) {
    error = "is empty";
    return nullptr;
  }
  auto doc = std::make_unique<Document>();
  if (!Reader(bytes, *doc).run(error)) return nullptr;
  return doc;
}

}  // namespace shardscope::import::pickle
