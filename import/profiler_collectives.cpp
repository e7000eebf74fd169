#include "import/profiler_collectives.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

#include "config/pipeline_schedule.h"
#include "files/user_json.h"
#include "import/profiler_compute.h"
#include "import/profiler_roles.h"
#include "trace/format.h"

namespace shardscope::import {

// import/ reads other tools' files into trace's vocabulary, which its code names as its own.
using namespace trace;

using profiler::RankTrace;
using profiler::Span;
using profiler::startsWith;

namespace {

std::optional<CollectiveOp> collectiveOpOf(const std::string& c10dName) {
  const std::string op = c10dName.substr(6);
  if (op == "allreduce_" || op == "allreduce_coalesced_") return CollectiveOp::AllReduce;
  if (op == "_allgather_base_" || op == "allgather_" || op == "allgather_into_tensor_coalesced_")
    return CollectiveOp::AllGather;
  if (op == "_reduce_scatter_base_" || op == "reduce_scatter_" || op == "reduce_scatter_tensor_coalesced_") {
    return CollectiveOp::ReduceScatter;
  }
  if (op == "broadcast_") return CollectiveOp::Broadcast;
  if (op == "barrier") return CollectiveOp::Barrier;
  if (op == "alltoall_base_" || op == "alltoall_") return CollectiveOp::AllToAll;
  if (op == "send") return CollectiveOp::Send;
  if (op == "recv_" || op == "recv_any_source_") return CollectiveOp::Recv;
  return std::nullopt;
}

int64_t elementBytes(const std::string& type) {
  if (type == "float" || type == "int") return 4;
  if (type == "double" || type == "long int" || type == "long") return 8;
  if (type == "c10::BFloat16" || type == "c10::Half" || type == "short") return 2;
  if (type == "unsigned char" || type == "signed char" || type == "bool" || type == "c10::Float8_e4m3fn") return 1;
  return 0;  // unknown (a TensorList says none)
}

// Elements of an "Input Dims" entry: a tensor's dims, or a (nested) list of tensors' dims.
int64_t elementsOf(const nlohmann::json& dims) {
  if (!dims.is_array() || dims.empty()) return 0;
  if (dims[0].is_array()) {
    int64_t total = 0;
    for (const auto& d : dims) total += elementsOf(d);
    return total;
  }
  int64_t n = 1;
  for (const auto& d : dims) n *= d.is_number_integer() ? d.get<int64_t>() : 0;
  return n;
}

std::string firstInputType(const Span& s) {
  if (!s.args || !s.args->contains("Input type") || !(*s.args)["Input type"].is_array() ||
      (*s.args)["Input type"].empty() || !(*s.args)["Input type"][0].is_string()) {
    return "";
  }
  return (*s.args)["Input type"][0].get<std::string>();
}

// The op's elements in and out. The ops that gather, scatter or exchange take (outputs, inputs), as
// tensors (_base_, coalesced) or lists of them (allgather_, reduce_scatter_, alltoall_); the others
// one list of tensors, reduced, sent or received in place.
std::pair<int64_t, int64_t> elementsInOut(const Span& op, CollectiveOp kind) {
  if (!op.args || !op.args->contains("Input Dims") || !(*op.args)["Input Dims"].is_array()) return {0, 0};
  const auto& dims = (*op.args)["Input Dims"];
  if (dims.empty()) return {0, 0};
  const bool outputsFirst =
      (kind == CollectiveOp::AllGather || kind == CollectiveOp::ReduceScatter || kind == CollectiveOp::AllToAll) &&
      dims.size() >= 2;
  const int64_t first = elementsOf(dims[0]);
  return outputsFirst ? std::pair{elementsOf(dims[1]), first} : std::pair{first, first};
}

// What NCCL's process group records of a collective (PyTorch's record_param_comms span inside the
// c10d op, its arguments repeated on the NCCL kernel): the message sizes, element type and group
// size, which a trace recorded without shapes (record_shapes=False) has nowhere else. Gloo's
// process group records none of it.
struct CommParams {
  int64_t in = 0, out = 0;          // elements
  int64_t width = 0;                // bytes per element; 0: not named
  int groupSize = 0;                // 0: not named
  std::vector<int64_t> inSplits;    // all-to-all: rows of the input for each rank of the group; empty: even
  std::vector<int64_t> groupRanks;  // the group's global ranks, in its order; empty: not named
  int64_t rankStart = -1;           // its first global rank, and the step between its ranks where
  int64_t rankStride = -1;          // they step evenly (-1: not named); the list is cut past 30 ranks
  std::string groupDescription;     // "default_pg", or a DeviceMesh dimension's group: "mesh_tp", ...
};

// "[3, 5]", as the profiler records a list of counts; empty for "[]" or anything else.
std::vector<int64_t> integerList(const nlohmann::json& value) {
  if (!value.is_string()) return {};
  const auto list = files::parseUserJson(value.get<std::string>()).value;  // a trace's text: untrusted
  if (!list.is_array()) return {};
  std::vector<int64_t> out;
  for (const auto& n : list) {
    if (!n.is_number_integer() || n.get<int64_t>() < 0) return {};
    out.push_back(n.get<int64_t>());
  }
  return out;
}

int64_t dtypeBytes(const std::string& dtype) {
  if (dtype == "Float" || dtype == "Int") return 4;
  if (dtype == "Double" || dtype == "Long") return 8;
  if (dtype == "BFloat16" || dtype == "Half" || dtype == "Short") return 2;
  if (dtype == "Byte" || dtype == "Char" || dtype == "Bool" || startsWith(dtype, "Float8")) return 1;
  return 0;
}

std::optional<CommParams> commParamsFrom(const nlohmann::json* args) {
  if (!args || !args->is_object() || !args->contains("In msg nelems")) return std::nullopt;
  auto number = [&](const char* key) {
    return args->contains(key) && (*args)[key].is_number_integer() ? std::max<int64_t>((*args)[key].get<int64_t>(), 0)
                                                                   : 0;
  };
  CommParams p;
  p.in = number("In msg nelems");
  p.out = number("Out msg nelems");
  p.groupSize = static_cast<int>(std::min<int64_t>(number("Group size"), kMaxRanks));
  if (args->contains("dtype") && (*args)["dtype"].is_string())
    p.width = dtypeBytes((*args)["dtype"].get<std::string>());
  if (args->contains("In split size")) p.inSplits = integerList((*args)["In split size"]);
  if (args->contains("Process Group Ranks")) p.groupRanks = integerList((*args)["Process Group Ranks"]);
  if (args->contains("Global rank start")) p.rankStart = number("Global rank start");
  if (args->contains("Global rank stride")) p.rankStride = number("Global rank stride");
  const auto description = args->find("Process Group Description");
  if (description != args->end() && description->is_string()) p.groupDescription = description->get<std::string>();
  return p;
}

// The group's global ranks: as the list names them, or from its first rank and stride where the
// list is cut short ("[0, 1, ..., 63]"); empty where neither is recorded.
std::vector<int> groupMembersOf(const CommParams& p) {
  std::vector<int> members;
  if (p.groupSize > 0 && static_cast<int>(p.groupRanks.size()) == p.groupSize) {
    for (int64_t r : p.groupRanks) members.push_back(static_cast<int>(r));
  } else if (p.groupSize > 0 && p.rankStart >= 0 && p.rankStride > 0) {
    for (int i = 0; i < p.groupSize; ++i) members.push_back(static_cast<int>(p.rankStart + i * p.rankStride));
  }
  return members;
}

// A DeviceMesh names each dimension's groups "mesh_<dimension>" (torchtitan: tp, dp, dp_shard,
// dp_replicate, ...): the name to give those ranks where they are a row or column of the grid.
std::optional<ProcessGroup> meshDimensionOf(const std::string& description) {
  if (!startsWith(description, "mesh_")) return std::nullopt;
  if (description.find("replicate") != std::string::npos) return ProcessGroup::Replicate;
  if (description.find("shard") != std::string::npos) return ProcessGroup::Shard;
  if (description == "mesh_tp") return ProcessGroup::Tensor;
  if (description == "mesh_dp") return ProcessGroup::Data;
  return std::nullopt;
}

// The group a collective ran in, where NCCL's record_param_comms names its ranks: its size, and the
// ranks' place on the job's grid, so that its members are matched with each other and not with
// another group's (a tensor group's with a data group's). Ranks no row or column of the grid holds
// keep the size alone, counted in `notes`.
void placeInGroup(Event& e, const CommParams& p, int world, CollectiveNotes& notes) {
  if (p.groupSize > 0) e.worldSize = p.groupSize;  // a sub-group's (HSDP, TP), not the world's
  const auto members = groupMembersOf(p);
  if (members.empty()) return;
  if (const auto group = processGroupOf(members, world, meshDimensionOf(p.groupDescription))) {
    e.processGroup = static_cast<uint8_t>(*group);
  } else {
    ++notes.offGrid;
  }
}

std::optional<CommParams> commParamsOf(const RankTrace& trace, const Span& op) {
  const auto thread = trace.threads.find(op.thread);
  if (thread != trace.threads.end()) {
    const auto& spans = thread->second.spans;
    auto it =
        std::lower_bound(spans.begin(), spans.end(), op.begin, [](const Span& s, int64_t t) { return s.begin < t; });
    for (; it != spans.end() && it->begin <= op.end; ++it) {
      if (it->name == "record_param_comms") return commParamsFrom(it->args);
    }
  }
  const Span* kernel = profiler::ncclKernelOf(trace, op);
  return kernel ? commParamsFrom(kernel->args) : std::nullopt;
}

// Which backend span ran which c10d op: for each family, the first unused one from the op's issue
// on (gloo runs a reduce-scatter as an all-reduce of the whole input: "gloo:all_reduce").
class BackendMatch {
 public:
  explicit BackendMatch(const RankTrace& trace) : trace_(trace), used_(trace.backendSpans.size(), false) {}

  const Span* of(const Span& op, CollectiveOp kind) {
    size_t& from = next_[static_cast<int>(kind)];
    for (size_t i = from; i < trace_.backendSpans.size(); ++i) {
      const Span& b = trace_.backendSpans[i];
      if (used_[i] || b.begin < op.begin || !ranIt(b.name, kind)) continue;
      used_[i] = true;
      if (i == from) ++from;
      return &b;
    }
    return nullptr;
  }

  const std::vector<bool>& matched() const { return used_; }

 private:
  static bool ranIt(const std::string& name, CollectiveOp kind) {
    auto has = [&](const char* part) { return name.find(part) != std::string::npos; };
    switch (kind) {
      case CollectiveOp::AllGather:
        return has("all_gather");
      case CollectiveOp::Broadcast:
        return has("broadcast");
      case CollectiveOp::Barrier:
        return has("barrier");
      case CollectiveOp::AllToAll:
        return has("all_to_all");
      case CollectiveOp::Send:
        return has("send");
      case CollectiveOp::Recv:
        return has("recv");
      case CollectiveOp::ReduceScatter:
        return has("reduce_scatter") || has("all_reduce");
      case CollectiveOp::AllReduce:
        return has("all_reduce");
    }
    return false;
  }
  const RankTrace& trace_;
  std::vector<bool> used_;
  size_t next_[kCollectiveOpCount] = {};
};

// A send's or recv's peer, its rank in the op's group, from the values the profiler records with
// shapes: c10d::send(tensors, group, peer, tag) and c10d::recv_(tensors, group, peer, tag); -1 for
// c10d::recv_any_source_(tensors, group, tag), which names none, or where none is recorded.
int32_t peerOf(const Span& op) {
  if (op.name == "c10d::recv_any_source_" || !op.args || !op.args->contains("Concrete Inputs")) return -1;
  const auto& values = (*op.args)["Concrete Inputs"];
  if (!values.is_array() || values.size() < 3 || !values[2].is_string()) return -1;
  const std::string peer = values[2].get<std::string>();
  if (peer.empty() || peer.size() > 9 || peer.find_first_not_of("0123456789") != std::string::npos) return -1;
  return static_cast<int32_t>(std::stol(peer));  // nine digits at most
}

// "to rank 1", "from rank 0", "from any rank"; where the trace does not name the peer (it names it
// only when recorded with record_shapes=True), says so, not that the peer's rank went untraced.
std::string peerText(const Span& op, CollectiveOp kind, int32_t peer) {
  const std::string way = kind == CollectiveOp::Send ? "to " : "from ";
  if (peer >= 0) return way + "rank " + std::to_string(peer);
  return way + (op.name == "c10d::recv_any_source_" ? "any rank" : "a rank the trace does not name");
}

// The transfer PyTorch's multi-stage runtime named around a send or receive ("PP:1RECV_F0" ->
// "1RECV_F0": which stage's output or input gradient, of which micro-batch), or "" where nothing
// names it (ScheduleGPipe, Schedule1F1B, a job's own sends).
std::string runtimeTransferAround(const RankTrace& trace, const Span& op) {
  const auto thread = trace.threads.find(op.thread);
  if (thread == trace.threads.end()) return "";
  const auto& t = thread->second;
  auto k = static_cast<size_t>(std::lower_bound(t.spans.begin(), t.spans.end(), op.begin,
                                                [](const Span& s, int64_t at) { return s.begin < at; }) -
                               t.spans.begin());
  while (k < t.spans.size() && t.spans[k].begin == op.begin && t.spans[k].name != op.name) ++k;
  if (k >= t.spans.size() || t.spans[k].begin != op.begin) return "";
  for (int p = t.parent[k]; p >= 0; p = t.parent[static_cast<size_t>(p)]) {
    const std::string& name = t.spans[static_cast<size_t>(p)].name;
    if (!startsWith(name, "PP:")) continue;
    const auto action = config::parseActionText(name.substr(3));
    if (action && !config::isComputeAction(action->kind)) return name.substr(3);
  }
  return "";
}

// An all-to-all's own part: the bytes of its input it sends to itself, which is also what its
// output gets from itself, so it sends its input less this and receives its output less this. From
// the input's split sizes the profiler records (NCCL's record_param_comms "In split size"; gloo's
// c10d::alltoall_base_(output, input, group, output_splits, input_splits, ...) concrete inputs) and
// this rank's place in the group. -1 where either is not recorded, or the splits are even ("[]").
int64_t ownPartBytes(const RankTrace& trace, const Span& op, const std::optional<CommParams>& params, const Event& e) {
  std::vector<int64_t> splits = params ? params->inSplits : std::vector<int64_t>{};
  if (splits.empty() && op.args && op.args->contains("Concrete Inputs")) {
    const auto& values = (*op.args)["Concrete Inputs"];
    if (values.is_array() && values.size() > 4) splits = integerList(values[4]);
  }
  // This rank's split: by its place among the group's ranks where NCCL names them; else (gloo names
  // none) only in the world's group, a split per rank: a sub-group's has fewer, and stays unknown.
  int index = -1;
  if (params && !params->groupRanks.empty()) {
    const auto at = std::find(params->groupRanks.begin(), params->groupRanks.end(), trace.rank);
    if (at != params->groupRanks.end() && params->groupRanks.size() == splits.size()) {
      index = static_cast<int>(at - params->groupRanks.begin());
    }
  } else if (static_cast<int>(splits.size()) == trace.world && e.worldSize == trace.world) {
    index = trace.rank;  // the world's group: its ranks in order
  }
  const int64_t rows = std::accumulate(splits.begin(), splits.end(), int64_t{0});
  if (index < 0 || rows <= 0 || e.bytes % rows != 0) return -1;
  return splits[static_cast<size_t>(index)] * (e.bytes / rows);
}

// A collective's unit, and its phase into `e`: from FSDP2's annotation around it where there is
// one ("FSDP::all_gather (blocks.1)"), else from the host's compute span it ran in, as a kernel's
// are (a tensor-parallel all-reduce in blocks.1's forward, between FSDP2's pre- and post-forward
// hooks); "model", in backward, where neither says.
std::string unitAndPhaseOf(const RankTrace& trace, const Span& op, const std::vector<Event>& host, Event& e) {
  std::string unit = "model";
  e.phase = static_cast<uint8_t>(Phase::Backward);
  for (const Span* s : profiler::spansAt(trace, op.thread, op.begin)) {
    const std::string u = fsdpUnitOf(s->name);
    if (!u.empty() && unit == "model") unit = u;
    if (s->name.find("forward") != std::string::npos || startsWith(s->name, "FSDP::all_gather")) {
      e.phase = static_cast<uint8_t>(Phase::Forward);
    }
    if (s->name.find("backward") != std::string::npos) e.phase = static_cast<uint8_t>(Phase::Backward);
  }
  if (unit != "model") return unit;
  const Event* around = hostSpanAt(host, op.begin);
  const auto kind = around ? static_cast<ComputeKind>(around->op) : ComputeKind::Optimizer;
  if (kind != ComputeKind::Forward && kind != ComputeKind::Backward) return unit;
  e.phase = around->phase;
  return around->text;
}

Event collectiveEvent(const RankTrace& trace, const Span& op, CollectiveOp kind, const Span* backend,
                      const std::vector<Event>& host, CollectiveNotes& notes) {
  Event e;
  e.kind = EventKind::Collective;
  e.rank = trace.rank;
  e.op = static_cast<uint8_t>(kind);
  e.issueNs = e.beginNs = op.begin;
  e.endNs = std::max(op.end, backend ? backend->end : op.end);
  // On a GPU the host only launches it: it ran when its NCCL kernel ran. The rank arrived at it
  // when its kernel began, too: the host's launches run ahead of the device, so which rank made
  // the others wait shows in the kernels' starts, not the launches (stats/stragglers.h).
  if (const Span* kernel = profiler::ncclKernelOf(trace, op)) {
    e.issueNs = e.beginNs = std::max(kernel->begin, op.begin);
    e.endNs = std::max(kernel->end, e.beginNs);
  }
  e.step = profiler::recordedStepAt(trace, op.begin);
  e.worldSize = trace.world;
  auto [in, out] = elementsInOut(op, kind);
  int64_t width = elementBytes(firstInputType(op));
  if (width == 0 && backend) width = elementBytes(firstInputType(*backend));
  // An older PyTorch records no shapes for a TensorList argument (allreduce_): its backend's span
  // ("nccl:all_reduce") names the tensor it ran on.
  if (in == 0 && out == 0 && backend) std::tie(in, out) = elementsInOut(*backend, kind);
  const auto params = commParamsOf(trace, op);
  if (params) {
    if (in == 0 && out == 0) std::tie(in, out) = std::pair{params->in, params->out};  // no shapes recorded
    if (width == 0) width = params->width;
    placeInGroup(e, *params, trace.world, notes);
  }
  // Gloo records no group (no record_param_comms): in a job that made sub-groups (its
  // distributedInfo lists them) this one may have run in one, with members no record names.
  if ((!params || params->groupSize <= 0) && trace.listsSubGroups && !isPointToPoint(kind)) ++notes.unnamedGroup;
  if (width == 0) {
    width = 4;
    ++notes.untyped;
  }
  e.bytes = in * width;
  e.bytesOut = out * width;
  // No shapes (a trace recorded with record_shapes=False) and no record of NCCL's: its size is not
  // in the trace, and 0 would read as measured. A barrier moves nothing.
  if (in == 0 && out == 0 && !params && kind != CollectiveOp::Barrier) e.sizeUnknown = 1;
  if (kind == CollectiveOp::AllToAll) e.ownPartBytes = ownPartBytes(trace, op, params, e);
  if (isPointToPoint(kind)) e.peer = peerOf(op);
  std::string unit = unitAndPhaseOf(trace, op, host, e);
  if (isPointToPoint(kind)) {
    const std::string named = runtimeTransferAround(trace, op);
    unit = (named.empty() ? "" : named + ", ") + peerText(op, kind, e.peer);
  }
  e.text = unit;
  if (backend && backend->name.find(collectiveOpName(kind)) == std::string::npos) e.text += "|" + backend->name;
  return e;
}

}  // namespace

std::optional<CollectiveOp> kindOfName(const std::string& name) {
  std::string s;
  for (char c : name) {
    if (c != '_') s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  auto has = [&](const char* part) { return s.find(part) != std::string::npos; };
  if (has("alltoall")) return CollectiveOp::AllToAll;
  if (has("reducescatter")) return CollectiveOp::ReduceScatter;
  if (has("allgather")) return CollectiveOp::AllGather;
  if (has("allreduce")) return CollectiveOp::AllReduce;
  if (has("broadcast")) return CollectiveOp::Broadcast;
  if (has("barrier")) return CollectiveOp::Barrier;
  if (has("sendrecv")) return std::nullopt;
  if (has("send")) return CollectiveOp::Send;
  if (has("recv")) return CollectiveOp::Recv;
  return std::nullopt;
}

std::optional<CollectiveOp> kindOfNcclKernel(const Span& kernel) {
  if (kernel.args && kernel.args->contains("Collective name") && (*kernel.args)["Collective name"].is_string())
    return kindOfName((*kernel.args)["Collective name"].get<std::string>());
  return kindOfName(kernel.name);
}

bool insideCollectiveRecord(const RankTrace& trace, int64_t thread, int64_t t, const Span* besides) {
  for (const Span* around : profiler::spansAt(trace, thread, t)) {
    if (around == besides) continue;
    if (startsWith(around->name, "c10d::") || profiler::isBackendSpanName(around->name) ||
        around->name == "record_param_comms")
      return true;
  }
  return false;
}

Event kernelCollective(const RankTrace& trace, const Span& kernel, CollectiveOp kind, const KernelContext& kernels,
                       CollectiveNotes& notes) {
  Event e;
  e.kind = EventKind::Collective;
  e.rank = trace.rank;
  e.op = static_cast<uint8_t>(kind);
  e.issueNs = e.beginNs = kernel.begin;
  e.endNs = std::max(kernel.end, kernel.begin);
  e.step = profiler::recordedStepAt(trace, kernel.begin);
  e.worldSize = trace.world;
  const std::string unit = unitAndPhaseOfKernelsAround(kernels, kernel.begin, e);
  const auto params = commParamsFrom(kernel.args);
  int64_t width = params ? params->width : 0;
  if (params && width == 0) {
    width = 4;
    ++notes.untyped;
  }
  if (params) {
    e.bytes = params->in * width;
    e.bytesOut = params->out * width;
    placeInGroup(e, *params, trace.world, notes);
  } else {
    e.sizeUnknown = 1;  // a kernel without its args: counted, its size not recorded
  }
  e.ownPartBytes = -1;  // no own part or peer known
  e.peer = -1;
  e.text = unit + "|" + kernel.name.substr(0, kernel.name.find('('));
  return e;
}

namespace {

// PyTorch 1.x: a backend's span with no c10d op around it is the collective's only host record
// (nccl:all_to_all, inside a record_param_comms that names nothing).
void readBackendSpansAlone(const RankTrace& trace, const std::vector<bool>& matched, const std::vector<Event>& host,
                           std::vector<Event>& out, CollectiveNotes& notes) {
  for (size_t i = 0; i < trace.backendSpans.size(); ++i) {
    const Span& b = trace.backendSpans[i];
    if (matched[i]) continue;
    const auto around = profiler::spansAt(trace, b.thread, b.begin);
    // The thread's copy of `b` is among them: the spans around it, not it, are asked.
    const bool inAnOp = std::any_of(around.begin(), around.end(), [&](const Span* s) {
      const bool itself = s->begin == b.begin && s->end == b.end && s->name == b.name;
      return !itself && (startsWith(s->name, "c10d::") || profiler::isBackendSpanName(s->name));
    });
    const auto kind = kindOfName(b.name);
    if (inAnOp || !kind) continue;
    if (trace.rank == 0) ++notes.fromBackend;
    out.push_back(collectiveEvent(trace, b, *kind, nullptr, host, notes));
  }
}

// record_param_comms naming its collective, with no op or backend span around or inside it.
void readParamsAlone(const RankTrace& trace, const std::vector<Event>& host, std::vector<Event>& out,
                     CollectiveNotes& notes) {
  for (const auto& [threadId, t] : trace.threads) {
    const auto thread = threadId;  // a lambda captures no structured binding in C++17 (clang refuses it)
    for (const Span& s : t.spans) {
      if (s.name != "record_param_comms" || !s.args || !s.args->contains("Collective name")) continue;
      const auto& named = (*s.args)["Collective name"];
      const auto kind = named.is_string() ? kindOfName(named.get<std::string>()) : std::nullopt;
      if (!kind || insideCollectiveRecord(trace, thread, s.begin, &s)) continue;
      const bool wrapsBackend = std::any_of(trace.backendSpans.begin(), trace.backendSpans.end(), [&](const Span& b) {
        return b.thread == thread && b.begin >= s.begin && b.begin <= s.end;
      });
      if (wrapsBackend) continue;
      if (trace.rank == 0) ++notes.fromParams;
      out.push_back(collectiveEvent(trace, s, *kind, nullptr, host, notes));
    }
  }
}

}  // namespace

bool hasHostCollectiveRecords(const RankTrace& trace) {
  if (!trace.c10dOps.empty() || !trace.backendSpans.empty() || !trace.outsideC10dOps.empty()) return true;
  for (const auto& [thread, t] : trace.threads) {
    for (const Span& s : t.spans) {
      if (s.name == "record_param_comms") return true;
    }
  }
  return false;
}

namespace {

// A trace cut to its device rows (no host record of any collective): its NCCL kernels are its
// collectives. Where host records exist, each kernel with a launch in the trace is one of theirs;
// one without was launched before the trace's window (readKernelsLaunchedBeforeWindow: a real
// FSDP2 trace of 2.11 holds 27 c10d ops and 35 NCCL kernels, 8 of them the step before's).
void readKernelsAlone(const KernelContext& kernels, std::vector<Event>& out, CollectiveNotes& notes) {
  const RankTrace& trace = kernels.trace;
  if (hasHostCollectiveRecords(trace)) return;
  for (const auto& [correlation, kernel] : trace.ncclKernels) {
    const auto kind = kindOfNcclKernel(kernel);
    if (!kind) continue;
    if (trace.rank == 0) ++notes.fromKernel;
    out.push_back(kernelCollective(trace, kernel, *kind, kernels, notes));
  }
}

}  // namespace

// Whether another collective's record begins within `op` on its thread (a c10d op, a backend's
// span, or another op outside c10d: a framework's all_reduce around symm_mem's): the collective is
// then that one's, and `op` only wraps it.
bool wrapsAnother(const RankTrace& trace, const Span& op) {
  for (const auto* list : {&trace.c10dOps, &trace.backendSpans, &trace.outsideC10dOps}) {
    auto it =
        std::lower_bound(list->begin(), list->end(), op.begin, [](const Span& s, int64_t t) { return s.begin < t; });
    for (; it != list->end() && it->begin < op.end; ++it) {
      // Strictly inside: one that starts where `op` ends is the next, and two of the same extent
      // are one record seen twice, not a wrapper and its collective.
      const bool sameExtent = it->begin == op.begin && it->end >= op.end;
      if (it->thread == op.thread && &*it != &op && it->end <= op.end && !sameExtent) return true;
    }
  }
  return false;
}

// Each op outside c10d that no other collective's record runs inside: a collective, timed on the
// device by the kernel it launched where the trace has it.
void readOutsideC10d(const KernelContext& kernels, std::vector<Event>& out, CollectiveNotes& notes) {
  const RankTrace& trace = kernels.trace;
  for (const Span& op : trace.outsideC10dOps) {
    const auto kind = kindOfName(op.name.substr(op.name.rfind("::") + 2));
    if (!kind || wrapsAnother(trace, op)) continue;
    Event e = collectiveEvent(trace, op, *kind, nullptr, kernels.host, notes);
    if (const profiler::CommKernel* kernel = commKernelOf(kernels, op)) {
      e.issueNs = e.beginNs = std::max(kernel->begin, op.begin);
      e.endNs = std::max(kernel->end, e.beginNs);
    }
    e.text += "|" + op.name;
    out.push_back(std::move(e));
    if (trace.rank == 0) ++notes.outsideC10d[op.name];
  }
}

void readProfilerCollectives(const KernelContext& kernels, std::vector<Event>& out, CollectiveNotes& notes) {
  const RankTrace& trace = kernels.trace;
  const std::vector<Event>& host = kernels.host;
  BackendMatch backends(trace);
  for (const Span& op : trace.c10dOps) {
    const auto kind = collectiveOpOf(op.name);
    if (!kind) {
      if (trace.rank == 0) ++notes.unreadOps;
      continue;
    }
    out.push_back(collectiveEvent(trace, op, *kind, backends.of(op, *kind), host, notes));
  }
  readBackendSpansAlone(trace, backends.matched(), host, out, notes);
  readParamsAlone(trace, host, out, notes);
  readKernelsAlone(kernels, out, notes);
  readOutsideC10d(kernels, out, notes);
}

}  // namespace shardscope::import
