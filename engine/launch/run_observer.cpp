#include "engine/launch/run_observer.h"

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <thread>

#include "engine/launch/pipe_backlog.h"
#include "engine/launch/stall_watch.h"
#include "engine/recording/catch_up_turns.h"
#include "trace/issued_collectives.h"
#include "trace/rank_placements.h"
#include "trace/stream_merger.h"
#include "files/user_json.h"

namespace shardscope::engine {

namespace {

using Clock = std::chrono::steady_clock;

// This process's CPU seconds so far, its threads' user and system time (forked ranks are other
// processes: theirs is not counted).
double processCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

std::string divergedMessage(const config::RunConfig& config, int step, double loss) {
  const std::string lr = files::shownNumber(config.lr);
  return "the loss is " + std::string(std::isnan(loss) ? "nan" : "infinite") + " after step " +
         std::to_string(step + 1) + " of " + std::to_string(config.steps) +
         ": training diverged, so the run was stopped (what it recorded is kept). Lower --lr (it is " + lr +
         "), e.g. --lr 0.001.";
}

class RunObserver {
 public:
  RunObserver(const config::RunConfig& config, std::vector<RankProcess>& ranks, const RunCallbacks& callbacks,
              const RecordingSink& sink, RunResult& result)
      : config_(config),
        ranks_(ranks),
        callbacks_(callbacks),
        sink_(sink),
        result_(result),
        // Ranks stream mostly in time order; a window of a few drains (5 ms each) absorbs the rest.
        merger_(config.world, /*windowNs=*/50'000'000, [this](const trace::Event& e) { takeMerged(e); }),
        stallWatch_(config.world, std::chrono::milliseconds(static_cast<int64_t>(config.stallTimeoutS * 1000)),
                    Clock::now()),
        gateReleased_(config.stepGate == config::StepGateMode::Off),
        issued_(config.world) {}

  RunObservation run() {
    const double cpuAtStart = processCpuSeconds();
    sink_.use(result_.recording, [&](trace::RunRecording& r) { r.reset(config_.world); });
    std::vector<int> pipes;
    for (const auto& p : ranks_) pipes.push_back(p.eventFd);
    const PipeBacklog backlog(pipes);
    CatchUpTurns turns([&backlog] { return backlog.fullest(); }, [this] { observeOnce(); }, [this] { waitForEvents(); },
                       [this] { return allDone(); });
    turns.run();
    result_.controllerCatchUpSeconds = turns.helperSeconds();
    merger_.flush();
    appendMerged();
    if (callbacks_.onIdle) callbacks_.onIdle();
    result_.controllerCpuSeconds = processCpuSeconds() - cpuAtStart;
    result_.outOfOrderEvents = merger_.outOfOrder();
    // A rank that stalled or failed: where every rank's collectives stood, for the hang's view.
    const bool failed = !observation_.stalled.empty() || !observation_.failureOrder.empty();
    if (failed && !issued_.empty())
      result_.lastCollectives = std::make_shared<const trace::CollectiveLogs>(issued_.logs());
    return std::move(observation_);
  }

 private:
  // One pass of the loop: what the pipes hold, who exited, the gate, whether to stop.
  void observeOnce() {
    readPipes();
    reapExited();
    appendMerged();
    if (callbacks_.onIdle) callbacks_.onIdle();
    if (!stopping_) serveGate();
    if (!stopping_) decideWhetherToStop();
    if (stopping_ && Clock::now() > stopDeadline_) signalRanks(ranks_, SIGKILL);
  }

  // A caller's recording takes a batch per lock; the run's own takes each event as it comes, with
  // no copy in between.
  void takeMerged(const trace::Event& e) {
    if (sink_.withRecording)
      merged_.push_back(e);
    else
      result_.recording.add(e);
    if (callbacks_.onMerged) callbacks_.onMerged(e);
  }

  void appendMerged() {
    if (merged_.empty()) return;
    sink_.use(result_.recording, [&](trace::RunRecording& r) {
      for (const auto& e : merged_) r.add(e);
    });
    merged_.clear();
  }

  // Asks every rank to stop (SIGTERM: each sends what it recorded, then exits); SIGKILL follows
  // for any still running after the grace.
  void stopRun() {
    stopping_ = true;
    signalRanks(ranks_, SIGTERM);
    stopDeadline_ = Clock::now() + std::chrono::seconds(kStopGraceSeconds);
  }

  // What every open pipe holds now is decoded and handled; no wait for more (waitForEvents).
  void readPipes() {
    std::vector<pollfd> fds = openPipes();
    if (fds.empty()) return;
    ::poll(fds.data(), fds.size(), 0);
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) readPipe(*owners_[i]);
    }
  }

  // Between passes, outside the turn (engine/recording/catch_up_turns.h): until a pipe has
  // something, at most 100 ms (10 ms with every pipe closed: only exits are still to come). The
  // pipes are those open at the last pass; one the helper closed meanwhile only ends the wait early.
  void waitForEvents() {
    std::vector<pollfd> fds;
    {
      std::lock_guard<std::mutex> lock(waitFdsMutex_);  // the helper's pass may be setting them
      fds = waitFds_;
    }
    if (fds.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return;
    }
    ::poll(fds.data(), fds.size(), 100);
  }

  // The open pipes, for a poll (owners_ says whose each is); kept for waitForEvents too.
  std::vector<pollfd> openPipes() {
    std::vector<pollfd> fds;
    owners_.clear();
    for (auto& p : ranks_) {
      if (p.eventFd >= 0) {
        fds.push_back({p.eventFd, POLLIN, 0});
        owners_.push_back(&p);
      }
    }
    std::lock_guard<std::mutex> lock(waitFdsMutex_);
    waitFds_ = fds;
    return fds;
  }

  void readPipe(RankProcess& p) {
    char buffer[65536];
    const ssize_t n = ::read(p.eventFd, buffer, sizeof(buffer));
    if (n > 0) {
      stallWatch_.heard(p.rank, Clock::now());
      p.items.feed(buffer, static_cast<size_t>(n), [&](std::string_view item) {
        // A heartbeat (an empty line) was heard above and decodes to nothing.
        if (auto event = trace::decodeStreamItem(item)) handleEvent(p, *event);
      });
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      ::close(p.eventFd);
      p.eventFd = -1;
      merger_.finishRank(p.rank);
      stallWatch_.ended(p.rank);
    }
  }

  // Collects the ranks that exited. Never blocks: a rank that closed its pipe but hangs on its way
  // out is still stopped (and killed after the grace) like any other.
  void reapExited() {
    for (auto& p : ranks_) {
      if (p.exited) continue;
      int status = 0;
      if (::waitpid(p.pid, &status, WNOHANG) == p.pid) {
        p.exited = true;
        p.waitStatus = status;
        if (rankFailed(p)) observation_.failureOrder.push_back(p.rank);
      }
    }
  }

  bool allDone() const {
    for (const auto& p : ranks_) {
      if (!p.exited || p.eventFd >= 0) return false;
    }
    return true;
  }

  void handleEvent(RankProcess& proc, const trace::Event& event) {
    stallWatch_.sent(proc.rank, event);
    issued_.add(event);
    if (event.kind == trace::EventKind::CollectiveIssued) return;  // for a hang's last collectives only
    if (callbacks_.onEvent) callbacks_.onEvent(event);
    switch (event.kind) {
      case trace::EventKind::Memory:
      case trace::EventKind::Collective:
      case trace::EventKind::CollectiveFailed:
      case trace::EventKind::Compute:
      case trace::EventKind::Dropped:
      case trace::EventKind::RunDone:
        merger_.push(event);
        break;
      case trace::EventKind::RunInfo:
        result_.rankPlacements[proc.rank] = event.text;
        result_.deviceDescription = trace::describeRankPlacements(result_.rankPlacements);
        if (proc.rank == 0) {
          result_.parameterCount = event.parameterCount;
          result_.device = stats::deviceFactsOf(event);
        }
        break;
      case trace::EventKind::StepEnd:
        proc.lastStep = event.step;
        merger_.push(event);
        countStepEnd(proc.rank, event);
        break;
      case trace::EventKind::RankError:
        proc.reportedError = event.text;
        break;
      case trace::EventKind::Group:
        if (event.endNs == 0) {  // "I wait at the gate now"
          proc.waitingAtGate = true;
          proc.waitingBefore = event.text;
          proc.waitingStep = event.step;
        } else {
          merger_.push(event);
        }
        break;
      case trace::EventKind::ClockOffset:  // a job's files across hosts; a controller's ranks share its clock
      case trace::EventKind::CollectiveIssued:
        break;
    }
  }

  // A step is the run's once every rank has ended it; its loss is then reported.
  void countStepEnd(int rank, const trace::Event& event) {
    result_.stepSeconds[rank].push_back(trace::activeStepNs(event) / 1e9);
    observation_.lossOfStep[event.step] = event.loss;
    if (++ranksDoneWithStep_[event.step] != config_.world) return;
    // Every rank has it: its loss is in the result now, and neither map grows with a long run.
    ranksDoneWithStep_.erase(event.step);
    observation_.lossOfStep.erase(event.step);
    double slowest = 0;
    for (const auto& s : result_.stepSeconds) slowest = std::max(slowest, s.back());
    result_.losses.push_back(event.loss);
    if (callbacks_.onStep) callbacks_.onStep(event.step, event.loss, slowest);
    if (!std::isfinite(event.loss) && observation_.diverged.empty()) {
      observation_.diverged = divergedMessage(config_, event.step, event.loss);
    }
  }

  // --step-gate: tell the caller where the ranks wait, and pass on its Step or Continue. A run
  // without a gateCommand is released for good at once.
  void serveGate() {
    if (gateReleased_) return;
    const GateCommand command = callbacks_.gateCommand ? callbacks_.gateCommand() : GateCommand::Continue;
    if (command == GateCommand::Continue) {
      releaseRanks(ranks_, 'c');
      gateReleased_ = true;
    } else if (command == GateCommand::Step) {
      releaseRanks(ranks_, 's');
    }
    GateStatus now = gateStatusOf(ranks_);
    now.released = gateReleased_;
    if (now.waiting == now.ranks && lastGate_.waiting != now.ranks) {
      // Every rank waits: nothing earlier is still to come from any of them, so what the merger
      // holds for its window goes to the recording now, and the view shows where they stand.
      merger_.flush();
      appendMerged();
      if (callbacks_.onIdle) callbacks_.onIdle();
    }
    if (now.waiting != lastGate_.waiting || now.next != lastGate_.next || now.step != lastGate_.step ||
        now.released != lastGate_.released) {
      lastGate_ = now;
      if (callbacks_.onGate) callbacks_.onGate(now);
    }
  }

  // The caller's Stop, a silent rank, a non-finite loss or a failed rank each end the run.
  void decideWhetherToStop() {
    if (callbacks_.shouldStop && callbacks_.shouldStop()) {
      observation_.stoppedByUser = true;
      stopRun();
      return;
    }
    const auto now = Clock::now();
    const int silent = stallWatch_.stalledRank(now);
    // Bytes waiting in its pipe mean the rank spoke while this loop was away (a slow callback,
    // the window exporting a trace): not a stall; they are read on the next pass.
    if (silent >= 0 && !hasPendingBytes(ranks_[silent])) {
      // A stopped or frozen rank holds every peer in its next collective until Gloo's timeout.
      observation_.stalled = stallWatch_.describeStall(silent, now);
      stopRun();
      return;
    }
    // Every later step would be nan too; and peers of a dead rank would wait in their collectives
    // until Gloo's timeout.
    if (!observation_.diverged.empty() || !observation_.failureOrder.empty()) stopRun();
  }

  const config::RunConfig& config_;
  std::vector<RankProcess>& ranks_;
  const RunCallbacks& callbacks_;
  const RecordingSink& sink_;
  RunResult& result_;
  RunObservation observation_;
  std::map<int, int> ranksDoneWithStep_;  // step -> ranks that finished it
  std::vector<trace::Event> merged_;      // with a sink: merged events waiting for its lock
  trace::StreamMerger merger_;
  StallWatch stallWatch_;
  bool stopping_ = false;
  Clock::time_point stopDeadline_ = Clock::time_point::max();
  GateStatus lastGate_;
  bool gateReleased_;
  trace::IssuedCollectives issued_;   // each rank's last collectives as issued, for a hang
  std::vector<RankProcess*> owners_;  // whose each pipe of the last pass's poll is
  std::mutex waitFdsMutex_;           // waitForEvents runs outside the turn
  std::vector<pollfd> waitFds_;       // the pipes open at the last pass, for waitForEvents
};

}  // namespace

RunObservation observeRanks(const config::RunConfig& config, std::vector<RankProcess>& ranks,
                            const RunCallbacks& callbacks, const RecordingSink& sink, RunResult& result) {
  return RunObserver(config, ranks, callbacks, sink, result).run();
}

}  // namespace shardscope::engine
