#include "import/profiler_compute.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "import/profiler_pipeline.h"
#include "import/profiler_roles.h"

namespace shardscope::import {

// import/ reads other tools' files into trace's vocabulary, which its code names as its own.
using namespace trace;

using profiler::RankTrace;
using profiler::Span;
using profiler::startsWith;

namespace {

Event computeSpan(int rank, ComputeKind kind, Phase phase, int64_t begin, int64_t end, int step, std::string unit) {
  Event e;
  e.kind = EventKind::Compute;
  e.rank = rank;
  e.op = static_cast<uint8_t>(kind);
  e.phase = static_cast<uint8_t>(phase);
  e.beginNs = begin;
  e.endNs = std::max(end, begin);
  e.step = step;
  e.text = std::move(unit);
  return e;
}

// FSDP2's forward of unit i runs between the end of "FSDP::pre_forward (i)" and the start of
// "FSDP::post_forward (i)"; its backward between "FSDP::pre_backward (i)" and the first
// "FSDP::post_backward_* (i)" (on whichever thread autograd ran it). DDP's forward is its own
// span; its backward, per step, from autograd's first evaluate_function to its last. The
// optimizer's is Optimizer.step.
void readHostCompute(const RankTrace& trace, std::vector<Event>& out) {
  std::map<int, std::pair<int64_t, int64_t>> autograd;  // step -> first begin, last end
  std::map<int, bool> unitBackward;                     // step -> FSDP2 backward spans read
  for (const auto& [thread, t] : trace.threads) {
    std::map<std::string, int64_t> opened;  // "forward i" / "backward i" -> when it began
    for (const Span& s : t.spans) {
      const int step = profiler::recordedStepAt(trace, s.begin);
      const std::string unit = fsdpUnitOf(s.name);
      if (startsWith(s.name, "FSDP::pre_forward")) opened["forward " + unit] = s.end;
      if (startsWith(s.name, "FSDP::pre_backward")) opened["backward " + unit] = s.end;
      for (const char* phase : {"forward", "backward"}) {
        const auto open = opened.find(std::string(phase) + " " + unit);
        if (!startsWith(s.name, (std::string("FSDP::post_") + phase).c_str()) || open == opened.end()) continue;
        const bool forward = std::string(phase) == "forward";
        out.push_back(computeSpan(trace.rank, forward ? ComputeKind::Forward : ComputeKind::Backward,
                                  forward ? Phase::Forward : Phase::Backward, open->second, s.begin, step, unit));
        if (!forward) unitBackward[step] = true;
        opened.erase(open);
      }
      if (s.name == "DistributedDataParallel.forward") {
        out.push_back(computeSpan(trace.rank, ComputeKind::Forward, Phase::Forward, s.begin, s.end, step, "model"));
      }
      if (startsWith(s.name, "Optimizer.step#")) {
        out.push_back(computeSpan(trace.rank, ComputeKind::Optimizer, Phase::Optimizer, s.begin, s.end, step, ""));
      }
      if (startsWith(s.name, "autograd::engine::evaluate_function") && step >= 0) {
        auto [span, added] = autograd.try_emplace(step, s.begin, s.end);
        if (!added) span->second = {std::min(span->second.first, s.begin), std::max(span->second.second, s.end)};
      }
    }
  }
  // torch.distributed.pipelining's actions: their backwards are the job's (autograd's spans run
  // inside them).
  std::vector<Event> actions;
  if (readPipelineCompute(trace, actions)) {
    for (const auto& e : actions) unitBackward[e.step] = true;
  }
  out.insert(out.end(), std::make_move_iterator(actions.begin()), std::make_move_iterator(actions.end()));
  for (const auto& [step, span] : autograd) {
    if (!unitBackward[step]) {
      out.push_back(
          computeSpan(trace.rank, ComputeKind::Backward, Phase::Backward, span.first, span.second, step, "model"));
    }
  }
}

// On a GPU the host's spans say when work was launched, not when it ran: the compute is the GPU's
// own kernels, each taking the phase, unit and step of the host span its launch was made in
// (matched by Kineto's correlation id); a kernel launched outside them is forward when the training
// thread launched it and backward when autograd's thread did. Kernels that touch or overlap on the
// device (several streams) and share all three are one span.
void readKernelCompute(const RankTrace& trace, const std::vector<Event>& host, std::vector<Event>& out) {
  std::map<int64_t, const profiler::Launch*> launchOf;
  for (const auto& l : trace.launches) launchOf.emplace(l.correlation, &l);
  std::vector<Event> spans;
  for (const auto& k : trace.computeKernels) {
    const auto launch = launchOf.find(k.correlation);
    const bool launched = launch != launchOf.end();
    const Event* around = launched ? hostSpanAt(host, launch->second->at) : nullptr;
    Event e = around ? *around : computeSpan(trace.rank, ComputeKind::Forward, Phase::Forward, 0, 0, -1, "model");
    if (!around && launched && launch->second->thread != trace.mainThread) {
      e.op = static_cast<uint8_t>(ComputeKind::Backward);
      e.phase = static_cast<uint8_t>(Phase::Backward);
    }
    if (!around) e.step = profiler::recordedStepAt(trace, launched ? launch->second->at : k.begin);
    e.beginNs = k.begin;
    e.endNs = std::max(k.end, k.begin);
    Event* last = spans.empty() ? nullptr : &spans.back();
    if (last && last->op == e.op && last->step == e.step && last->text == e.text && e.beginNs <= last->endNs) {
      last->endNs = std::max(last->endNs, e.endNs);
    } else {
      spans.push_back(std::move(e));
    }
  }
  out.insert(out.end(), std::make_move_iterator(spans.begin()), std::make_move_iterator(spans.end()));
}

}  // namespace

std::vector<Event> hostComputeSpans(const RankTrace& trace) {
  std::vector<Event> host;
  readHostCompute(trace, host);
  std::sort(host.begin(), host.end(), [](const Event& a, const Event& b) { return a.beginNs < b.beginNs; });
  return host;
}

// The latest begun that has not ended, so the innermost of nested ones (a block's forward inside
// the root's). The search looks back over a bounded number of spans: a span ended that many spans
// ago is no longer a candidate (the root's forward spans a few hundred blocks' at most).
const Event* hostSpanAt(const std::vector<Event>& host, int64_t t) {
  constexpr int kLookBack = 1024;
  auto it = std::upper_bound(host.begin(), host.end(), t, [](int64_t v, const Event& e) { return v < e.beginNs; });
  for (int n = 0; it != host.begin() && n < kLookBack; ++n) {
    --it;
    if (it->endNs >= t) return &*it;
  }
  return nullptr;
}

void readProfilerCompute(const RankTrace& trace, const std::vector<Event>& host, std::vector<Event>& out) {
  if (trace.computeKernels.empty()) {
    out.insert(out.end(), host.begin(), host.end());
  } else {
    readKernelCompute(trace, host, out);
  }
}

}  // namespace shardscope::import
