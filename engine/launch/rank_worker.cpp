#include "engine/launch/rank_worker.h"

#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <thread>

#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include "engine/recording/collector_link.h"
#include "engine/comm/communicator.h"
#include "engine/comm/process_mesh.h"
#include "engine/launch/core_binding.h"
#include "engine/models/model.h"
#include "config/pipeline_config.h"
#include "config/tensor_parallel.h"
#include "engine/models/make_model.h"
#include "engine/launch/rank_device.h"
#include "engine/recording/rank_reporter.h"
#include "engine/recording/recorder.h"
#include "engine/recording/recording_allocator.h"
#include "engine/launch/step_gate.h"
#include "engine/launch/rank_training.h"
#include "engine/recording/tensor_files.h"
#include "engine/strategies/train_step.h"
#include "files/output_file.h"
#include "trace/rank_event_files.h"

namespace shardscope::engine {

namespace {

// Fault injection for tests of failure handling: SHARDSCOPE_FAULT="rank=R,step=S,mode=M" makes
// rank R, at the start of step S:
//   kill         die (SIGKILL) once all it recorded has reached the controller;
//   error        throw;
//   stop         stop itself (SIGSTOP), as a debugger or Ctrl-Z would: it stalls;
//   unsent-kill  keep what it records from then on unsent (a writer starved of CPU) and die three
//                steps later with those step ends still queued.
void maybeInjectFault(RankRecorder& recorder, int rank, int step) {
  const char* spec = std::getenv("SHARDSCOPE_FAULT");
  if (!spec) return;
  int faultRank = -1, faultStep = -1;
  char mode[16] = {0};
  if (std::sscanf(spec, "rank=%d,step=%d,mode=%15s", &faultRank, &faultStep, mode) != 3) return;
  if (faultRank != rank) return;
  const std::string how = mode;
  if (how == "unsent-kill") {
    if (step == faultStep) recorder.holdOutputForTest();
    if (step == faultStep + 3) std::raise(SIGKILL);
    return;
  }
  if (faultStep != step) return;
  // The fault strikes after everything up to here has reached the controller, so tests see a
  // deterministic "died during step S+1".
  recorder.flushNow();
  if (how == "kill") std::raise(SIGKILL);
  if (how == "stop") {
    std::raise(SIGSTOP);
    return;
  }
  throw std::runtime_error("injected fault at step " + std::to_string(step) + " (SHARDSCOPE_FAULT)");
}

// --hang-rank R:STEP: rank R stops before step STEP (from 1), alive (its recorder's heartbeat goes
// on) but never reaching the step's collectives, as a rank stuck in its data loader would. The
// others wait in the step's first collective until --collective-timeout fails them; the controller
// then stops this rank (SIGTERM, whose thread flushes what it recorded and exits).
void maybeHang(const config::RunConfig& config, int rank, int step) {
  const auto hang = config::hangRankOf(config.hangRank);
  if (!hang || hang->rank != rank || hang->step != step + 1) return;
  std::fprintf(stderr,
               "shardscope: rank %d stops before step %d, as --hang-rank %s asks: the others will wait in "
               "its first collective\n",
               rank, hang->step, config.hangRank.c_str());
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

// GPU ranks: one GPU each where there are enough; otherwise several rank processes share a GPU.
// NCCL refuses two ranks of one communicator on one GPU of one host. NCCL 2.30+ lifts that with
// NCCL_MULTI_RANK_GPU_ENABLE=1; with an older NCCL each sharing rank gets a host identity of its
// own (NCCL_HOSTID), and NCCL connects them as separate hosts over sockets on the loopback
// interface. Slow, but real NCCL collectives between real processes. Set before NCCL initialises.
std::unique_ptr<RankDevice> setUpGpu(const RendezvousInfo& info, bool instrumented, at::ScalarType computeDtype) {
  const int gpus = visibleCudaDevices();
  if (gpus == 0) {
    throw std::runtime_error("--device cuda but no CUDA device is visible to rank " + std::to_string(info.rank) +
                             "; use --device cpu.");
  }
  GpuPlacement placement = placeOnGpu(info.localRank, info.worldSize, gpus);
  placement.ncclVersion = loadedNcclVersion();
  placement.sharing =
      chooseSharedGpuMethod(placement.ranksOnGpu, placement.ncclVersion, std::getenv("SHARDSCOPE_SHARED_GPU"));
  if (placement.sharing == SharedGpuMethod::MultiRankGpu) {
    ::setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", /*overwrite=*/1);
  } else if (placement.sharing == SharedGpuMethod::HostIdPerRank) {
    const std::string hostId = "shardscope-rank" + std::to_string(info.rank);
    ::setenv("NCCL_HOSTID", hostId.c_str(), /*overwrite=*/1);
    ::setenv("NCCL_SOCKET_IFNAME", "lo", /*overwrite=*/0);
    ::setenv("NCCL_IB_DISABLE", "1", /*overwrite=*/0);
  }
  return setupCudaRank(placement, instrumented, computeDtype);
}

void writeHeldTensors(const std::string& path, const std::vector<HeldTensor>& held, int rank) {
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& h : held) {
    tensors.push_back({{"name", h.name},
                       {"role", trace::memoryRoleName(h.role)},
                       {"numel", h.numel},
                       {"bytes", h.bytes},
                       {"space", h.host ? "host" : "device"}});
  }
  std::ofstream(path) << nlohmann::json{{"rank", rank}, {"tensors", tensors}}.dump(1) << "\n";
}

// SIGTERM (the controller stopping the run, torchrun stopping the job) ends the rank after what it
// recorded has reached the controller: a handler cannot flush safely, so the signal is blocked in
// every thread (the mask is inherited; set before any thread starts) and one thread waits for it.
// That thread outlives the worker's scope (it is detached), as `recorder` does (never destroyed).
void flushEventsOnTerminate(RankRecorder& recorder) {
  sigset_t terminate;
  sigemptyset(&terminate);
  sigaddset(&terminate, SIGTERM);
  if (pthread_sigmask(SIG_BLOCK, &terminate, nullptr) != 0) return;
  std::thread([terminate, &recorder] {
    int signal = 0;
    while (sigwait(&terminate, &signal) != 0) {}
    recorder.flushNow();
    ::_exit(128 + SIGTERM);
  }).detach();
}

// glibc hands large frees back to the kernel (munmap, or trimming the heap's top), and the next
// step's allocations of the same sizes fault those pages in again, zeroed: twice a PyTorch rank's
// page faults, about 3% of a small GPT's CPU step (docs/benchmarks.md). A rank allocates the same
// sizes every step, so it keeps them as a caching allocator would: blocks up to 32 MiB (glibc's
// largest setting) come from the heap, and up to 1 GiB of free heap stays mapped. Memory figures
// come from the allocator hook, not the process's size, so none changes; between steps the
// process keeps its step's peak. A MALLOC_* setting of the user's wins.
void keepFreedHostMemory() {
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") || std::getenv("MALLOC_TRIM_THRESHOLD_")) return;
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

void reportError(RankReporter& reporter, int rank, const std::string& text) {
  trace::Event e;
  e.kind = trace::EventKind::RankError;
  e.rank = rank;
  e.text = text;
  reporter.send(e);
}

// The job's options as this rank sees them: the world the launcher started.
config::RunConfig launchedConfig(const config::RunConfig& config, int worldSize) {
  config::RunConfig launched = config;
  launched.world = worldSize;
  return launched;
}

// The shard group's size for the mesh: the hybrid strategies' S, resolved against the world the
// launcher started (under torchrun WORLD_SIZE, not --world); 0, a 1-D mesh, for every other.
int meshShardRanks(const config::RunConfig& config, int worldSize) {
  if (!config::traitsOf(config.strategy).replicatesShardGroups) return 0;
  const config::RunConfig launched = launchedConfig(config, worldSize);
  if (auto problem = config::shardGroupProblem(launched)) throw std::runtime_error(*problem);
  return config::shardGroupSize(launched);
}

// What the rank's file says of its clock (trace::EventKind::ClockOffset).
trace::Event clockOffsetEvent(int rank, const ClockReading& clock) {
  trace::Event e;
  e.kind = trace::EventKind::ClockOffset;
  e.rank = rank;
  e.beginNs = clock.localNs;
  e.endNs = clock.rank0Ns;
  e.uncertaintyNs = clock.uncertaintyNs;
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) == 0) e.text = host;
  return e;
}

// DIR/rank-R{part}.events, created with DIR, for this rank's event stream; -1 with `problem` saying why.
int openRankEventFile(const std::string& dir, int rank, const std::string& part, std::string& problem) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  const std::string path = trace::rankEventFileName(dir, rank, part);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    problem = "--trace-dir: cannot write '" + path + "': " + std::strerror(errno) +
              "; give it a directory every rank can write (on each host)";
  }
  return fd;
}

// Where a rank with no controller streams its events.
struct EventOutput {
  int fd = -1;          // -1: nowhere (events are counted, not kept)
  bool socket = false;  // a collector's connection
};

// The collector when one is named and reachable (with the rank's file to go on in if it is lost),
// else the rank's file. Nothing, with `problem`, when the file cannot be written.
std::optional<EventOutput> openEventOutput(const WorkerRecording& where, const config::RunConfig& config, int rank,
                                           RankRecorder& recorder, std::string& problem) {
  EventOutput out;
  const int world = std::getenv("WORLD_SIZE") ? std::atoi(std::getenv("WORLD_SIZE")) : 1;
  const std::string dir = where.traceDir;
  if (where.collectorPort > 0) {
    trace::CollectorHello hello{rank, world, where.token, ""};
    if (rank == 0) hello.configJson = launchedConfig(config, world).toJson().dump();
    const std::string at = where.collectorHost + ":" + std::to_string(where.collectorPort);
    std::string why;
    out.fd = connectToCollector(where.collectorHost, where.collectorPort, hello, why);
    if (out.fd >= 0) {
      out.socket = true;
      if (!dir.empty()) {
        const int fallback = openRankEventFile(dir, rank, ".after-collector", problem);
        if (fallback < 0) return std::nullopt;
        recorder.divertOnLoss(fallback, "shardscope worker, rank " + std::to_string(rank) + ": lost the collector at " +
                                            at + "; writing the rest to " +
                                            trace::rankEventFileName(dir, rank, ".after-collector"));
      }
      return out;
    }
    std::fprintf(stderr, "shardscope worker, rank %d: cannot reach the collector at %s (%s); %s\n", rank, at.c_str(),
                 why.c_str(),
                 dir.empty() ? "training on without recording (give --trace-dir DIR to keep the events in a file)"
                             : ("writing " + trace::rankEventFileName(dir, rank) + " instead").c_str());
  }
  if (!dir.empty()) {
    out.fd = openRankEventFile(dir, rank, "", problem);
    if (out.fd < 0) return std::nullopt;
  }
  return out;
}

// What shardscope's controller gives a rank and another launcher cannot, and what WORLD_SIZE (which
// validate() did not see under torchrun) must divide: refused before anything starts.
void checkLaunch(const config::RunConfig& config, const RendezvousInfo& info, StepGate& gate) {
  const char* gateFd = std::getenv("SHARDSCOPE_GATE_FD");
  if (config.stepGate != config::StepGateMode::Off && !gateFd) {
    throw std::runtime_error(std::string("--step-gate ") + config::modeName(config.stepGate) +
                             " needs shardscope's controller to release the ranks (shardscope run, compare or the "
                             "app); a worker started by another launcher cannot be released, so run it with "
                             "--step-gate off.");
  }
  gate.start(config.stepGate, gateFd ? std::atoi(gateFd) : -1);
  if (auto problem = config::tensorParallelProblem(launchedConfig(config, info.worldSize))) {
    throw std::runtime_error(*problem + " (WORLD_SIZE=" + std::to_string(info.worldSize) + ")");
  }
  if (auto problem = config::pipelineProblem(launchedConfig(config, info.worldSize))) {
    throw std::runtime_error(*problem + " (WORLD_SIZE=" + std::to_string(info.worldSize) + ")");
  }
  const int dataRanks = info.worldSize / config.tp / config.pp;
  const std::string ranks = "WORLD_SIZE=" + std::to_string(info.worldSize) +
                            (config.tp > 1 ? " / --tp " + std::to_string(config.tp) : std::string()) +
                            (config.pp > 1 ? " / --pp " + std::to_string(config.pp) : std::string());
  if (config.batch % dataRanks != 0) {
    throw std::runtime_error("--batch " + std::to_string(config.batch) + " is not divisible by " + ranks);
  }
  const int localBatch = config.batch / dataRanks;
  if (config.accumulate < 1 || localBatch % config.accumulate != 0) {
    throw std::runtime_error("--accumulate " + std::to_string(config.accumulate) +
                             " does not divide a rank's batch of " + std::to_string(localBatch) + " (--batch " +
                             std::to_string(config.batch) + " / " + ranks + ")");
  }
}

void setIntraOpThreads(int boundCores, const at::Device& device, int worldSize) {
  if (boundCores > 0) {
    // Its slice, on any device: the OpenMP pool was sized from the whole mask at load time.
    at::set_num_threads(boundCores);
  } else if (device.is_cpu()) {
    // Ranks share the run's cores; one intra-op pool each would oversubscribe them.
    const int cores = std::max(1, static_cast<int>(allowedCores().size()));
    at::set_num_threads(std::max(1, cores / worldSize));
  }
}

// --export's starting point: the initial parameters and every step's global batch (rank 0).
void exportInitialState(const config::RunConfig& config, const StagedModel& model) {
  saveTensorDict(config.exportDir + "/init.pt", model.fullInitialParameters(config.seed));
  std::vector<at::Tensor> xs, ys;
  for (int s = 0; s < config.steps; ++s) {
    auto b = model.globalBatch(config.seed, s, config.batch);
    xs.push_back(b.x);
    ys.push_back(b.y);
  }
  saveTensorDict(config.exportDir + "/data.pt", {{"x", at::stack(xs)}, {"y", at::stack(ys)}});
}

// The rank is up: where it runs (device, backend, GPU, cores), its world and the parameter count.
trace::Event runInfoEvent(const config::RunConfig& config, int rank, int worldSize, const StagedModel& model,
                          const at::Device& device, Communicator& comm, RankDevice* gpu, const std::string& coresNote) {
  trace::Event info;
  info.kind = trace::EventKind::RunInfo;
  info.rank = rank;
  info.worldSize = worldSize;
  info.parameterCount = model.parameterCount();
  info.text = device.str() + " / " + comm.backendName();
  if (gpu) {
    info.deviceMemoryBytes = gpu->totalMemoryBytes();
    info.peakFlopsPerSecond = static_cast<int64_t>(gpu->measuredPeakFlops());
    info.text += " / " + gpu->placement().describe();
    const std::string note = gpu->runtimeLaneNote();
    if (!note.empty()) info.text += " / " + note;
  }
  if (config.precision == config::Precision::Bf16) info.text += " / bf16 compute, fp32 reduce";
  info.text += coresNote;
  return info;
}

struct RankPlace {
  int rank;
  int worldSize;
  at::Device device;
  config::TensorPlace mesh;  // under --tp: the slice of the batch its tensor group trains on
};

// One training step on this rank's shard of the global batch, then the global mean loss (for the
// progress line) and the step's end sent.
void trainOneStep(const config::RunConfig& config, int step, const RankPlace& place, RankTraining& training,
                  StepGate& gate, Communicator& comm, RankReporter& reporter) {
  maybeInjectFault(gate.recorder(), place.rank, step);
  maybeHang(config, place.rank, step);
  auto& recorder = gate.recorder();
  recorder.setStep(step);
  // --recording alternate: even steps recorded, odd steps not (the overhead benchmark).
  if (config.recording == config::RecordingMode::Alternate) recorder.setEnabled(step % 2 == 0);
  const int64_t begin = trace::nowNs();
  const int64_t pausedBefore = gate.pausedNs();
  Batch local;
  {
    RoleScope role(trace::MemoryRole::Other);
    Batch global = training.model().globalBatch(config.seed, step, config.batch);
    local = localShard(global, place.mesh.dataRank, place.mesh.dataRanks);
    local.x = local.x.to(place.device);
    local.y = local.y.to(place.device);
  }
  at::Tensor loss = training.step(local);
  // Every rank's local batch is the same size: the sum over ranks / world is the global mean (under
  // --pp only the last stage's ranks hold a loss, world / pp of them).
  at::Tensor globalLoss = loss.reshape({1}).clone();
  comm.allReduceSumAsync(globalLoss, "loss (logging)")->wait();
  trace::Event e;
  e.kind = trace::EventKind::StepEnd;
  e.rank = place.rank;
  e.step = step;
  e.loss = globalLoss.item<double>() / (place.worldSize / std::max(1, config.pp));
  e.beginNs = begin;
  e.endNs = trace::nowNs();
  e.pausedNs = gate.pausedNs() - pausedBefore;
  reporter.send(e);
}

// --bind-cores rank: this rank's process on its own slice of the cores; their count (0: not bound).
int bindToCoreSlice(const config::RunConfig& config, const RendezvousInfo& info, std::string& coresNote) {
  if (config.bindCores != config::BindCores::Rank) return 0;
  const auto cores = bindProcessToCores(coreSlice(allowedCores(), info.localRank, info.localWorldSize));
  coresNote = " / cores " + describeCores(cores);
  return static_cast<int>(cores.size());
}

// What `view DIR` shows a job that recorded itself as: its options, with the world the launcher started.
void writeJobConfig(const config::RunConfig& config, const std::string& traceDir, int worldSize) {
  if (auto error = files::writeOutputFile(trace::rankEventConfigName(traceDir), [&](std::ostream& out) {
        out << launchedConfig(config, worldSize).toJson().dump(2) << "\n";
      })) {
    throw std::runtime_error(*error);
  }
}

// After the last step: --export's held tensors and final parameters (a collective every rank
// takes part in; under --tp the tensor groups' slices joined), then a barrier, so no rank leaves
// while a peer still needs it.
void finishRun(const config::RunConfig& config, int rank, RankTraining& training, Communicator& comm) {
  const bool exporting = !config.exportDir.empty();
  if (exporting) {
    writeHeldTensors(config.exportDir + "/held_rank" + std::to_string(rank) + ".json", training.heldTensors(), rank);
  }
  const StagedModel& model = training.model();
  auto finalParams = training.wholeParameters(
      joinTensorParallel(training.fullParameters(), model.splitsByName(), model.tensorParallel()), comm);
  if (exporting && rank == 0) saveTensorDict(config.exportDir + "/final.pt", finalParams);
  comm.barrier("end of run");
}

// Events a rank may hold before the streaming thread drains them; beyond this they are dropped
// and counted (a drain runs every few milliseconds, so this is ample for any step). A test sets
// SHARDSCOPE_EVENT_BUFFER (2 to 2^18 events) small to have the ranks drop events for certain.
size_t eventBufferCapacity() {
  constexpr size_t kCapacity = 1 << 18;
  const char* text = std::getenv("SHARDSCOPE_EVENT_BUFFER");
  const long long events = text ? std::atoll(text) : 0;
  return events >= 2 && events <= static_cast<long long>(kCapacity) ? static_cast<size_t>(events) : kCapacity;
}

// The rank's recorder, started before anything else runs, on its output: the controller's pipe
// (SHARDSCOPE_EVENT_FD) or, a rank recording itself, its collector or file (`recordsItself`).
// Null, said on stderr, when that output cannot be opened. Never destroyed: LibTorch's allocator
// hook and the SIGTERM thread may still reach it while the process exits.
RankRecorder* startRecorder(const config::RunConfig& config, const WorkerRecording& recording, int rank,
                            const char* eventFd, bool& recordsItself) {
  RankRecorder& recorder = *new RankRecorder();
  flushEventsOnTerminate(recorder);  // first: before any other thread exists
  keepFreedHostMemory();             // before the first large allocation
  EventOutput output{eventFd ? std::atoi(eventFd) : -1, false};
  if (!eventFd) {  // a controller's pipe wins: it records the run
    std::string problem;
    const auto opened = openEventOutput(recording, config, rank, recorder, problem);
    if (!opened) {
      std::fprintf(stderr, "shardscope worker, rank %d: %s\n", rank, problem.c_str());
      return nullptr;
    }
    output = *opened;
  }
  // A rank recording itself (a file, a collector) has no controller to tell its steps and clock to.
  recordsItself = !eventFd && output.fd >= 0;
  installRecordingCpuAllocator(recorder);  // before this rank creates any tensor
  recorder.start(rank, output.fd, eventBufferCapacity(), output.socket);
  recorder.setEnabled(config.recording != config::RecordingMode::Off);
  return &recorder;
}

// Where the rank computes: its slice of the cores (--bind-cores), its GPU (--device cuda, into
// `gpu`, which the caller holds past an error) and its intra-op threads. `coresNote`: the slice,
// for runInfoEvent; `failureHint`: what to add to this rank's errors on a shared GPU.
at::Device placeRank(const config::RunConfig& config, const RendezvousInfo& info, std::unique_ptr<RankDevice>& gpu,
                     std::string& coresNote, std::string& failureHint) {
  // Before CUDA and NCCL start their threads, which then inherit the slice.
  const int boundCores = bindToCoreSlice(config, info, coresNote);
  const bool instrumented = config.recording != config::RecordingMode::Off;
  if (config.device == config::DeviceKind::Cuda) {
    gpu = setUpGpu(info, instrumented, config.precision == config::Precision::Bf16 ? at::kBFloat16 : at::kFloat);
  }
  if (gpu && gpu->placement().sharing == SharedGpuMethod::MultiRankGpu) {
    failureHint =
        " (this GPU is shared through NCCL_MULTI_RANK_GPU_ENABLE, NCCL's experimental "
        "support; SHARDSCOPE_SHARED_GPU=hostid shares it over sockets instead)";
  }
  const at::Device device = gpu ? gpu->device() : at::Device(at::kCPU);
  setIntraOpThreads(boundCores, device, info.worldSize);
  return device;
}

// The rank's process groups, into `mesh` (which the caller holds past an error). A job that
// records itself may span hosts: each rank's clock against rank 0's. Decided by the options alone,
// the same on every rank (rank 0 answers every other rank's pings).
void connectRankMesh(const config::RunConfig& config, const WorkerRecording& recording, bool hasController,
                     const RendezvousInfo& info, RankDevice* gpu, RankRecorder& recorder, RankReporter& reporter,
                     std::unique_ptr<ProcessMesh>& mesh) {
  const bool measureClock = !hasController && (!recording.traceDir.empty() || recording.collectorPort > 0);
  ClockReading clock;
  mesh = connectMesh(info, gpu, recorder, meshShardRanks(config, info.worldSize), config.tp, config.pp,
                     measureClock ? &clock : nullptr, recording.clockEverySeconds);
  if (measureClock) reporter.send(clockOffsetEvent(info.rank, clock));
}

// The training loop: every step, with the clock read again whenever its rounds are due.
void trainSteps(const config::RunConfig& config, const RankPlace& place, RankTraining& training, StepGate& gate,
                ProcessMesh& mesh, RankReporter& reporter) {
  for (int step = 0; step < config.steps; ++step) {
    trainOneStep(config, step, place, training, gate, mesh.world(), reporter);
    if (mesh.clockRounds() && mesh.clockRounds()->dueAfter(step)) {
      reporter.send(clockOffsetEvent(place.rank, mesh.clockRounds()->measure()));
    }
  }
  // A last reading at the end: with the first, it follows a clock that drifted during the run.
  if (mesh.clockRounds()) reporter.send(clockOffsetEvent(place.rank, mesh.clockRounds()->measure()));
}

// The end of a run that trained every step: --export's files (not recorded), the process groups
// closed, and the rank's RunDone sent.
void endRun(const config::RunConfig& config, int rank, RankRecorder& recorder, RankTraining& training,
            ProcessMesh& mesh, RankReporter& reporter) {
  // Exports below are not training: their collectives and buffers stay out of the recording.
  recorder.setEnabled(false);
  finishRun(config, rank, training, mesh.world());
  mesh.close();
  trace::Event done;
  done.kind = trace::EventKind::RunDone;
  done.rank = rank;
  reporter.send(done);
}

}  // namespace

int runRankWorker(const config::RunConfig& config, const WorkerRecording& recording) {
  int rank = std::getenv("RANK") ? std::atoi(std::getenv("RANK")) : 0;
  const char* eventFd = std::getenv("SHARDSCOPE_EVENT_FD");
  bool recordsItself = false;
  // The rank's recorder, handed to everything that records from here.
  RankRecorder* started = startRecorder(config, recording, rank, eventFd, recordsItself);
  if (!started) return 1;
  RankRecorder& recorder = *started;
  RankReporter reporter(recorder, rank, recordsItself);
  StepGate gate(recorder);  // the strategy and the training step mark their hook points here
  struct StopRecorder {
    RankRecorder& recorder;
    ~StopRecorder() { recorder.stop(); }
  } stopRecorder{recorder};  // flushes what was recorded on every way out, errors included
  std::string failureHint;   // appended to any error of this rank
  // Held outside the try: a failing rank's error reaches the controller (reported and flushed in
  // the catch) before its communicator closes. Closing it first failed the peers with "connection
  // closed by peer", whose reports could reach the controller before the cause's own.
  // The device outlives the communicator, so the clock's last poll still sees the communication
  // stream's final collectives.
  std::unique_ptr<RankDevice> gpu;
  std::unique_ptr<ProcessMesh> mesh;
  try {
    RendezvousInfo info = rendezvousFromEnvironment();
    info.collectiveTimeoutS = config.collectiveTimeoutS;
    rank = info.rank;
    checkLaunch(config, info, gate);
    if (const auto slow = config::slowRankOf(config.slowRank); slow && slow->rank == rank)
      setComputeSlowdown(slow->factor);
    std::string coresNote;
    const at::Device device = placeRank(config, info, gpu, coresNote, failureHint);
    const std::string& traceDir = recording.traceDir;
    if (!eventFd && !traceDir.empty() && rank == 0) writeJobConfig(config, traceDir, info.worldSize);
    connectRankMesh(config, recording, eventFd != nullptr, info, gpu.get(), recorder, reporter, mesh);
    // Under --pp the (data, tensor) grid is its pipeline stage's block of ranks.
    const config::PipelinePlace stage = config::pipelinePlace(rank, info.worldSize, config.pp);
    const config::TensorPlace meshPlace = config::tensorPlace(stage.stageRank, stage.stageRanks, config.tp);
    RankTraining training(config, makeModel(config, {config.tp, meshPlace.tensorRank, mesh->tensor()}), *mesh, device,
                          gate);

    if (!config.exportDir.empty() && rank == 0) exportInitialState(config, training.model());
    reporter.send(
        runInfoEvent(config, rank, info.worldSize, training.model(), device, mesh->world(), gpu.get(), coresNote));
    trainSteps(config, {rank, info.worldSize, device, meshPlace}, training, gate, *mesh, reporter);
    endRun(config, rank, recorder, training, *mesh, reporter);
    return 0;
  } catch (const c10::Error& ex) {
    reportError(reporter, rank, ex.what_without_backtrace() + failureHint);
  } catch (const std::exception& ex) {
    reportError(reporter, rank, ex.what() + failureHint);
  }
  recorder.flushNow();  // the error on its way before the communicator closes (at return)
  return 1;
}

}  // namespace shardscope::engine
