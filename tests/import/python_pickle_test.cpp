// Pickles written by Python's own pickle module, at each protocol pickle.dump can write with plain
// values, read back into the same values; what is not plain data (objects, cycles, text opcodes,
// numbers past 64 bits, absurd nesting) is refused by name, and no cut or damaged pickle crashes
// the reader.
#include "import/python_pickle.h"

#include <gtest/gtest.h>

#include <random>

#include <nlohmann/json.hpp>

#include "tests/support/run_cli.h"

namespace shardscope::import::pickle {
namespace {

// The value as JSON: tuples as lists, bytes as {"bytes": hex}, dict keys as their text.
nlohmann::json toJson(const Value& v) {
  switch (v.kind()) {
    case Kind::None:
      return nullptr;
    case Kind::Bool:
      return v.boolean();
    case Kind::Int:
      return v.integer();
    case Kind::Float:
      return v.real();
    case Kind::String:
      return std::string(v.text());
    case Kind::Bytes: {
      std::string hex;
      for (unsigned char c : v.text()) {
        static const char* digits = "0123456789abcdef";
        hex += digits[c >> 4];
        hex += digits[c & 15];
      }
      return {{"bytes", hex}};
    }
    case Kind::List:
    case Kind::Tuple: {
      auto out = nlohmann::json::array();
      for (size_t i = 0; i < v.size(); ++i) out.push_back(toJson(v[i]));
      return out;
    }
    case Kind::Dict: {
      auto out = nlohmann::json::object();
      for (size_t i = 0; i + 1 < v.size(); i += 2) {
        const Value key = v[i];
        out[key.kind() == Kind::String ? std::string(key.text()) : toJson(key).dump()] = toJson(v[i + 1]);
      }
      return out;
    }
  }
  return nullptr;
}

// Runs `code` under Python with `dir` as its argv[1]; fails the test when it fails.
void python(const std::string& code, const std::string& dir) {
  const auto result = testing::runCommand({SHARDSCOPE_TEST_PYTHON, "-c", code, dir});
  ASSERT_EQ(result.exitCode, 0) << result.output;
}

std::string readBytes(const std::string& path) { return testing::fileContents(path); }

// The same Python value both pickled (at protocol P, to DIR/pP.pickle) and as JSON (DIR/pP.json).
const char* kValues = R"(
import json, pickle, sys
d = sys.argv[1]
shared = {"name": "torch::autograd::Engine::evaluate_function", "filename": "??", "line": 0}
value = {
    "ints": [0, 1, -1, 255, 256, 65535, 65536, -2**31, 2**31 - 1, 2**31, 2**63 - 1, -2**63, 139934094589952],
    "floats": [0.5, -1e300, 3.25e-7],
    "text": ["", "h\u00e9llo \u4e16\u754c", "x" * 300, "y" * 70000],
    "tuples": [(), (1,), (1, 2), (1, 2, 3), (1, 2, 3, 4)],
    "flags": [True, False, None],
    "shared": [shared, shared, [shared]],
    "nested": [[[[]]]],
    "many": list(range(2500)),
    "dicts": {str(i): i for i in range(1200)},
    "set": {7},
}
def plain(v):
    if isinstance(v, dict): return {k: plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset)): return [plain(x) for x in v]
    if isinstance(v, (bytes, bytearray)): return {"bytes": v.hex()}
    return v
for p in range(2, pickle.HIGHEST_PROTOCOL + 1):
    v = dict(value)
    if p >= 3:
        v["bytes"] = b"\x00\x01\xfe\xff"   # protocol 2 pickles bytes through a GLOBAL
    if p < 4:
        del v["set"]                        # and sets, before protocol 4
    if p >= 5:
        v["bytearray"] = bytearray(b"ab")   # BYTEARRAY8, in band
    pickle.dump(v, open(d + "/p%d.pickle" % p, "wb"), protocol=p)
    json.dump(plain(v), open(d + "/p%d.json" % p, "w"))
)";

TEST(PythonPickle, ReadsWhatPythonWritesAtEveryProtocol) {
  const std::string dir = testing::freshTempDir("python_pickle");
  python(kValues, dir);
  for (int p = 2; p <= 5; ++p) {
    const std::string bytes = readBytes(dir + "/p" + std::to_string(p) + ".pickle");
    if (bytes.empty()) continue;  // a Python without protocol 5
    std::string error;
    const DocumentPtr doc = readPickle(bytes, error);
    ASSERT_TRUE(doc) << "protocol " << p << ": " << error;
    const Value v = doc->root();
    EXPECT_EQ(toJson(v), nlohmann::json::parse(testing::fileContents(dir + "/p" + std::to_string(p) + ".json")))
        << "protocol " << p;
    // A value pickle shared (its memo) is one node, not a copy per use.
    const Value shared = v.get("shared");
    ASSERT_TRUE(shared.isList() && shared.size() == 3);
    EXPECT_EQ(shared[0].node(), shared[1].node()) << "protocol " << p;
    EXPECT_EQ(shared[0].node(), shared[2][0].node()) << "protocol " << p;
    EXPECT_EQ(v.get("ints")[12].intOr(0), 139934094589952) << "a device address (LONG1)";
    EXPECT_EQ(v.get("shared")[0].get("name").text(), "torch::autograd::Engine::evaluate_function");
    EXPECT_FALSE(v.get("no such key")) << "a key the dict lacks";
  }
}

// A snapshot's shape: every entry with its own copies of the same frame dicts (pickle's memo
// shares none of them) and its own copy of the same text. Equal containers are one node and equal
// texts one text, so what the tree keeps per entry is its own dict, not its frames.
TEST(PythonPickle, EqualContainersAndTextsAreKeptOnce) {
  const std::string dir = testing::freshTempDir("python_pickle_shared");
  python(R"(
import pickle, sys
frames = [{"name": "f%d" % k, "filename": "/x/m%d.py" % (k % 3), "line": k} for k in range(12)]
entries = [{"addr": i, "frames": [dict(f) for f in frames], "action": "".join(["al", "loc"])} for i in range(5000)]
pickle.dump(entries, open(sys.argv[1] + "/s.pickle", "wb"))
)",
         dir);
  std::string error;
  const DocumentPtr doc = readPickle(readBytes(dir + "/s.pickle"), error);
  ASSERT_TRUE(doc) << error;
  const Value entries = doc->root();
  ASSERT_EQ(entries.size(), 5000u);
  EXPECT_EQ(entries[0].get("frames").node(), entries[4999].get("frames").node()) << "one frames list for all";
  EXPECT_EQ(entries[4999].get("frames")[11].get("name").text(), "f11");
  EXPECT_EQ(entries[4999].get("addr").intOr(-1), 4999);
  EXPECT_EQ(entries[4999].get("action").text(), "alloc");
  // The entries, the list of them, one frames list and its 12 frames (a copy's node serves the
  // next container, so at most a few are left over).
  EXPECT_LE(doc->containers(), 5000u + 1 + 1 + 12 + 2);
  // 12 names, 3 files, "alloc" and the 6 keys: 5000 copies of "alloc" are one.
  EXPECT_EQ(doc->texts(), 12u + 3 + 1 + 6);
  // Per entry: its dict's 32-byte node and 6 items of 16 bytes, and its 16-byte item in the list of
  // entries (the node and the item in arrays that may hold up to twice what they use, as vectors
  // grow). Its 12 frames, were each a node of its own, would add 12 x (32 + 6 x 16) bytes.
  EXPECT_LT(doc->retainedBytes(), 5000u * (2 * 32 + 6 * 16 + 2 * 16) + 64 * 1024);
}

// A copy found equal to a container placed before gives its node to the next container made; the
// memo, which named the copy, then names the one kept, so a later use of the copy reads right.
TEST(PythonPickle, AContainerFoundEqualIsStillReadWhereTheMemoUsesItAgain) {
  const std::string dir = testing::freshTempDir("python_pickle_reuse");
  python(R"(
import json, pickle, sys
a, b = {"k": [1, "x"]}, {"k": [1, "x"]}
value = [[a, b], {"z": (2.5, None)}, b, [b, [b]], {"k": [1, "y"]}]
pickle.dump(value, open(sys.argv[1] + "/r.pickle", "wb"))
json.dump(value, open(sys.argv[1] + "/r.json", "w"))
)",
         dir);
  std::string error;
  const DocumentPtr doc = readPickle(readBytes(dir + "/r.pickle"), error);
  ASSERT_TRUE(doc) << error;
  EXPECT_EQ(toJson(doc->root()), nlohmann::json::parse(testing::fileContents(dir + "/r.json")));
  EXPECT_EQ(doc->root()[0][0].node(), doc->root()[2].node());
  EXPECT_NE(doc->root()[4].node(), doc->root()[2].node()) << "equal keys, a different value";
}

TEST(PythonPickle, RefusesWhatIsNotPlainDataNamingWhy) {
  const std::string dir = testing::freshTempDir("python_pickle_refused");
  python(R"(
import collections, pickle, sys
d = sys.argv[1]
class Job: pass
cases = {
    "object": Job(),
    "ordered": collections.OrderedDict(a=1),
    "wide": [2**64],
    "deep": None,
}
deep = []
for _ in range(300): deep = [deep]
cases["deep"] = deep
for name, v in cases.items():
    pickle.dump(v, open("%s/%s.pickle" % (d, name), "wb"))
pickle.dump([1, 2], open(d + "/text.pickle", "wb"), protocol=0)
loop = []
loop.append(loop)
pickle.dump(loop, open(d + "/loop.pickle", "wb"))
a = []
b = [a]
a.append(b)
pickle.dump(b, open(d + "/cycle.pickle", "wb"))
)",
         dir);
  const std::pair<const char*, const char*> cases[] = {
      {"object", "builds a Python object (STACK_GLOBAL)"}, {"ordered", "builds a Python object"},
      {"wide", "holds an integer wider than 64 bits"},     {"deep", "nests deeper than 200 levels"},
      {"text", "uses protocol 0's text opcode"},           {"loop", "puts a value inside itself"},
      {"cycle", "adds to a value already inside another"},
  };
  for (const auto& [name, why] : cases) {
    std::string error;
    EXPECT_FALSE(readPickle(readBytes(dir + "/" + name + ".pickle"), error)) << name;
    EXPECT_NE(error.find(why), std::string::npos) << name << ": " << error;
    EXPECT_NE(error.find("(opcode at byte "), std::string::npos) << name << ": says where: " << error;
  }
}

TEST(PythonPickle, NoCutOrDamagedPickleCrashesTheReader) {
  const std::string dir = testing::freshTempDir("python_pickle_damaged");
  python(kValues, dir);
  const std::string whole = readBytes(dir + "/p4.pickle");
  ASSERT_GT(whole.size(), 1000u);
  std::string error;
  ASSERT_TRUE(readPickle(whole, error)) << error;
  // Every cut: refused, saying it was cut short (or what it met first).
  for (size_t n = 0; n < whole.size(); n += 1 + n / 50) {
    EXPECT_FALSE(readPickle(std::string_view(whole).substr(0, n), error)) << "cut at " << n;
    EXPECT_FALSE(error.empty()) << "cut at " << n;
  }
  std::string lastError;
  readPickle(std::string_view(whole).substr(0, whole.size() - 1), lastError);
  EXPECT_NE(lastError.find("before its STOP opcode: the file was cut short"), std::string::npos) << lastError;
  // Bytes flipped: read or refused, never a crash.
  std::mt19937 random(20261127);
  for (int i = 0; i < 400; ++i) {
    std::string damaged = whole;
    for (int f = 0; f < 1 + i % 6; ++f) damaged[random() % damaged.size()] ^= static_cast<char>(1 + random() % 255);
    const DocumentPtr v = readPickle(damaged, error);
    EXPECT_TRUE(v || !error.empty());
  }
}

}  // namespace
}  // namespace shardscope::import::pickle
