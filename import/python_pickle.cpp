#include "import/python_pickle.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <unordered_map>

namespace shardscope::trace::pickle {

const Value* Value::get(std::string_view key) const {
  if (kind != Kind::Dict) return nullptr;
  for (size_t i = 0; i + 1 < items.size(); i += 2) {
    if (items[i]->kind == Kind::String && items[i]->text == key) return items[i + 1].get();
  }
  return nullptr;
}

int64_t Value::intOr(const Value* v, int64_t fallback) { return v && v->kind == Kind::Int ? v->integer : fallback; }

std::string_view Value::textOf(const Value* v) { return v && v->kind == Kind::String ? std::string_view(v->text) : ""; }

namespace {

using Kind = Value::Kind;

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

class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}

  ValuePtr run(std::string& error) {
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
        if (stack_.empty())
          fail("has an empty stack at its STOP (byte " + std::to_string(opcodeAt) + ")");
        else
          return stack_.back();
        break;
      }
      if (!step(op)) {
        if (error_.empty()) fail("cannot be read");
        error_ += " (opcode at byte " + std::to_string(opcodeAt) + ")";
      }
    }
    error = error_;
    return nullptr;
  }

 private:
  std::string_view bytes_;
  size_t at_ = 0;
  std::vector<ValuePtr> stack_;
  std::vector<size_t> marks_;  // stack sizes at each MARK
  std::unordered_map<uint64_t, ValuePtr> memo_;
  int64_t made_ = 0;  // values made so far
  std::string error_;

  bool fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
    return false;
  }

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

  ValuePtr make(Kind kind) {
    ++made_;
    auto v = std::make_shared<Value>();
    v->kind = kind;
    return v;
  }

  bool push(ValuePtr v) {
    if (made_ + static_cast<int64_t>(stack_.size()) > kMaxPickleValues) {
      return fail("holds more than " + std::to_string(kMaxPickleValues) +
                  " values, more than shardscope reads: record a shorter history");
    }
    stack_.push_back(std::move(v));
    return true;
  }

  bool pushInt(int64_t i) {
    auto v = make(Kind::Int);
    v->integer = i;
    return push(std::move(v));
  }

  ValuePtr pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) {
      fail("takes a value from an empty stack");
      return nullptr;
    }
    auto v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }

  ValuePtr top() {
    if (stack_.empty()) {
      fail("reads the top of an empty stack");
      return nullptr;
    }
    return stack_.back();
  }

  // The values since the last MARK, which is dropped.
  bool popMark(std::vector<ValuePtr>& out) {
    if (marks_.empty()) return fail("closes a MARK it never opened");
    const size_t from = marks_.back();
    marks_.pop_back();
    out.assign(std::make_move_iterator(stack_.begin() + static_cast<std::ptrdiff_t>(from)),
               std::make_move_iterator(stack_.end()));
    stack_.resize(from);
    return true;
  }

  // `child` goes inside `parent`; after this nothing more may be added to `child`.
  bool place(const ValuePtr& child, Value& parent) {
    if (child.get() == &parent) return fail("puts a value inside itself");
    if (parent.placed) return fail("adds to a value already inside another");
    child->placed = true;
    parent.depth = std::max(parent.depth, child->depth + 1);
    if (parent.depth > kMaxPickleDepth) {
      return fail("nests deeper than " + std::to_string(kMaxPickleDepth) + " levels");
    }
    parent.items.push_back(child);
    return true;
  }

  bool placeAll(std::vector<ValuePtr>& values, Value& parent) {
    for (auto& v : values) {
      if (!place(v, parent)) return false;
    }
    return true;
  }

  ValuePtr container(Kind kind) {
    auto c = top();
    if (c && c->kind != kind) {
      fail(std::string("adds items to a value that is not a ") + (kind == Kind::Dict ? "dict" : "list"));
      return nullptr;
    }
    return c;
  }

  bool appendItems(std::vector<ValuePtr> values) {
    auto list = container(Kind::List);
    return list && placeAll(values, *list);
  }

  bool setItems(std::vector<ValuePtr> values) {
    if (values.size() % 2 != 0) return fail("sets a dict item without its value");
    auto dict = container(Kind::Dict);
    return dict && placeAll(values, *dict);
  }

  bool tupleOf(std::vector<ValuePtr> values, Kind kind = Kind::Tuple) {
    auto t = make(kind);
    return placeAll(values, *t) && push(std::move(t));
  }

  bool tupleOfLast(size_t n) {
    if (stack_.size() < n || (!marks_.empty() && stack_.size() - n < marks_.back()))
      return fail("builds a tuple from an empty stack");
    std::vector<ValuePtr> values(std::make_move_iterator(stack_.end() - static_cast<std::ptrdiff_t>(n)),
                                 std::make_move_iterator(stack_.end()));
    stack_.resize(stack_.size() - n);
    return tupleOf(std::move(values));
  }

  bool text(size_t lengthBytes, Kind kind) {
    uint64_t n = 0;
    std::string_view b;
    if (!unsignedLE(lengthBytes, n) || !take(n, b)) return false;
    auto v = make(kind);
    v->text.assign(b);
    return push(std::move(v));
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

  bool memoGet(uint64_t index) {
    const auto found = memo_.find(index);
    if (found == memo_.end()) return fail("refers to memo entry " + std::to_string(index) + ", which it never stored");
    return push(found->second);
  }

  bool memoPut(uint64_t index) {
    auto v = top();
    if (!v) return false;
    memo_[index] = std::move(v);
    return true;
  }

  // Opcodes that push a number, a string or None, or move the stack; nothing for any other.
  std::optional<bool> valueStep(unsigned char op) {
    uint64_t n = 0;
    std::string_view b;
    std::vector<ValuePtr> values;
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
        return pop() != nullptr;
      case '1':
        return popMark(values);
      case '2': {
        auto v = top();
        return v && push(std::move(v));
      }
      case 'N':
        return push(make(Kind::None));
      case 0x88:
      case 0x89: {
        auto v = make(Kind::Bool);
        v->boolean = op == 0x88;
        return push(std::move(v));
      }
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
        for (char c : b) u = (u << 8) | static_cast<unsigned char>(c);  // big-endian
        auto v = make(Kind::Float);
        std::memcpy(&v->real, &u, sizeof u);
        return push(std::move(v));
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
    std::vector<ValuePtr> values;
    switch (op) {
      case '}':
        return push(make(Kind::Dict));
      case ']':
        return push(make(Kind::List));
      case ')':
        return push(make(Kind::Tuple));
      case 0x8f:
        return push(make(Kind::List));  // EMPTY_SET: a set is read as a list
      case 'd': {
        if (!popMark(values)) return false;
        auto d = make(Kind::Dict);
        return push(d) && setItems(std::move(values));
      }
      case 'l':
        return popMark(values) && tupleOf(std::move(values), Kind::List);
      case 't':
        return popMark(values) && tupleOf(std::move(values));
      case 0x91:
        return popMark(values) && tupleOf(std::move(values), Kind::List);  // FROZENSET
      case 0x85:
        return tupleOfLast(1);
      case 0x86:
        return tupleOfLast(2);
      case 0x87:
        return tupleOfLast(3);
      case 'a': {
        auto v = pop();
        return v && appendItems({v});
      }
      case 'e':
      case 0x90:
        return popMark(values) && appendItems(std::move(values));  // APPENDS, ADDITEMS
      case 's': {
        auto value = pop();
        auto key = pop();
        return value && key && setItems({key, value});
      }
      case 'u':
        return popMark(values) && setItems(std::move(values));
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

}  // namespace

ValuePtr readPickle(std::string_view bytes, std::string& error) {
  error.clear();
  if (bytes.empty()) {
    error = "is empty";
    return nullptr;
  }
  return Reader(bytes).run(error);
}

}  // namespace shardscope::trace::pickle
