#include "engine/recorder.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "trace/wire.h"

namespace shardscope {

namespace {
thread_local trace::MemoryRole tRole = trace::MemoryRole::Other;
thread_local trace::Phase tPhase = trace::Phase::None;
constexpr auto kDrainInterval = std::chrono::milliseconds(5);
}  // namespace

RankRecorder& RankRecorder::instance() {
  static RankRecorder* recorder = new RankRecorder();  // never destroyed: hooks may outlive main
  return *recorder;
}

void RankRecorder::start(int rank, int fd, size_t capacity) {
  rank_ = rank;
  fd_ = fd;
  queue_ = std::make_unique<trace::BoundedEventQueue<trace::Event>>(capacity);
  running_.store(true);
  enabled_.store(true);
  writer_ = std::thread([this] { writerLoop(); });
}

void RankRecorder::stop() {
  if (!running_.exchange(false)) return;
  enabled_.store(false);
  if (writer_.joinable()) writer_.join();
}

void RankRecorder::record(trace::Event&& event) {
  if (!enabled() || !queue_) return;
  event.rank = rank_;
  if (!queue_->tryPush(std::move(event))) dropped_.fetch_add(1, std::memory_order_relaxed);
}

void RankRecorder::control(trace::Event event) {
  event.rank = rank_;
  std::lock_guard<std::mutex> lock(controlMutex_);
  controlEvents_.push_back(std::move(event));
}

void RankRecorder::writeAll(const std::string& bytes) {
  if (fd_ < 0) return;
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      fd_ = -1;  // the controller is gone; keep training quietly
      return;
    }
    done += static_cast<size_t>(n);
  }
}

void RankRecorder::drainOnce(std::string& buffer) {
  buffer.clear();
  trace::Event e;
  // Data first, then control: a StepEnd must follow the events of its step.
  while (queue_->tryPop(e)) buffer += trace::encodeEventLine(e);
  const int64_t dropped = dropped_.load(std::memory_order_relaxed);
  if (dropped != droppedReported_) {
    trace::Event d;
    d.kind = trace::EventKind::Dropped;
    d.rank = rank_;
    d.beginNs = trace::nowNs();
    d.count = dropped - droppedReported_;
    droppedReported_ = dropped;
    buffer += trace::encodeEventLine(d);
  }
  std::deque<trace::Event> control;
  {
    std::lock_guard<std::mutex> lock(controlMutex_);
    control.swap(controlEvents_);
  }
  for (auto& c : control) buffer += trace::encodeEventLine(c);
  writeAll(buffer);
}

void RankRecorder::writerLoop() {
  // The writer yields to training when they compete for a core: lowest priority for this thread.
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 19);
  std::string buffer;
  while (running_.load()) {
    drainOnce(buffer);
    {
      std::lock_guard<std::mutex> lock(drainMutex_);
      ++drains_;
    }
    drained_.notify_all();
    std::this_thread::sleep_for(kDrainInterval);
  }
  drainOnce(buffer);
}

void RankRecorder::flushNow() {
  if (!running_.load()) return;
  std::unique_lock<std::mutex> lock(drainMutex_);
  const uint64_t target = drains_ + 2;  // one drain may have started before our events arrived
  drained_.wait_for(lock, std::chrono::seconds(2), [&] { return drains_ >= target; });
}

trace::MemoryRole currentRole() { return tRole; }
trace::Phase currentPhase() { return tPhase; }

RoleScope::RoleScope(trace::MemoryRole role) : previous_(tRole) { tRole = role; }
RoleScope::~RoleScope() { tRole = previous_; }

PhaseScope::PhaseScope(trace::Phase phase) : previous_(tPhase) { tPhase = phase; }
PhaseScope::~PhaseScope() { tPhase = previous_; }

ComputeSpan::ComputeSpan(trace::ComputeKind kind, std::string unit)
    : kind_(kind), unit_(std::move(unit)), begin_(trace::nowNs()) {}

ComputeSpan::~ComputeSpan() {
  auto& recorder = RankRecorder::instance();
  if (!recorder.enabled()) return;
  trace::Event e;
  e.kind = trace::EventKind::Compute;
  e.step = recorder.step();
  e.beginNs = begin_;
  e.endNs = trace::nowNs();
  e.op = static_cast<uint8_t>(kind_);
  e.phase = static_cast<uint8_t>(currentPhase());
  e.text = std::move(unit_);
  recorder.record(std::move(e));
}

}  // namespace shardscope
