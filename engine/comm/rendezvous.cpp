// Rendezvous exactly as torchrun does it: the environment names this rank and the master, where a
// c10d::TCPStore that every rank (and so every backend) bootstraps from listens. The launcher hosts
// it (shardscope's controller, torchrun's agent: TORCHELASTIC_USE_AGENT_STORE=True), or else rank 0.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "engine/recording/clock_sync.h"

#include "engine/comm/backend_factories.h"
#include "engine/comm/communicator.h"
#include "engine/comm/loopback_listener.h"
#include "engine/comm/process_mesh.h"
#include "config/pipeline_config.h"
#include "config/tensor_parallel.h"
#include "engine/recording/recording_communicator.h"

namespace shardscope::engine {

namespace {

std::string requireEnv(const char* name) {
  const char* value = std::getenv(name);
  if (!value || !*value) {
    throw std::runtime_error(std::string("environment variable ") + name +
                             " is not set; start ranks with 'shardscope run' or torchrun, which set "
                             "RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT.");
  }
  return value;
}

int requireIntEnv(const char* name, int minValue) {
  std::string text = requireEnv(name);
  char* end = nullptr;
  long value = std::strtol(text.c_str(), &end, 10);
  if (*end != '\0' || value < minValue || value > 65535) {
    throw std::runtime_error(std::string("environment variable ") + name + "='" + text +
                             "' is not a valid integer >= " + std::to_string(minValue) + ".");
  }
  return static_cast<int>(value);
}

// How long a rank waits for the store (default 120 s).
int rendezvousTimeoutSeconds() {
  const char* text = std::getenv("SHARDSCOPE_RENDEZVOUS_TIMEOUT_S");
  if (!text || !*text) return 120;
  return requireIntEnv("SHARDSCOPE_RENDEZVOUS_TIMEOUT_S", 1);
}

// c10d's messages run to a backtrace: the first line is the one that says what happened.
std::string firstLine(const std::string& text) {
  const auto end = text.find('\n');
  return end == std::string::npos ? text : text.substr(0, end);
}

}  // namespace

RendezvousInfo rendezvousFromEnvironment() {
  RendezvousInfo info;
  info.rank = requireIntEnv("RANK", 0);
  info.worldSize = requireIntEnv("WORLD_SIZE", 1);
  // The local pair is read together: without LOCAL_RANK every rank counts as on one host (rank,
  // world), whatever LOCAL_WORLD_SIZE a launcher that sets only that says.
  const bool local = std::getenv("LOCAL_RANK") != nullptr;
  info.localRank = local ? requireIntEnv("LOCAL_RANK", 0) : info.rank;
  info.localWorldSize =
      local && std::getenv("LOCAL_WORLD_SIZE") ? requireIntEnv("LOCAL_WORLD_SIZE", 1) : info.worldSize;
  info.masterAddr = requireEnv("MASTER_ADDR");
  info.masterPort = requireIntEnv("MASTER_PORT", 1);
  if (info.rank >= info.worldSize) {
    throw std::runtime_error("RANK=" + std::to_string(info.rank) +
                             " must be below WORLD_SIZE=" + std::to_string(info.worldSize) + ".");
  }
  if (info.localRank >= info.localWorldSize) {
    throw std::runtime_error("LOCAL_RANK=" + std::to_string(info.localRank) +
                             " must be below LOCAL_WORLD_SIZE=" + std::to_string(info.localWorldSize) + ".");
  }
  return info;
}

namespace {

// A single-host job (MASTER_ADDR names the loopback: 127.x, ::1 or localhost), whose store no
// other host has to reach.
bool isLoopback(const std::string& address) { return isLoopbackAddress(address).value_or(false); }

c10::intrusive_ptr<c10d::TCPStore> connectStore(const RendezvousInfo& info) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>(info.masterPort);
  // Under shardscope's controller or torchrun the launcher already hosts the store.
  const char* agentStore = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  const bool agentHostsStore = agentStore && std::string(agentStore) == "True";
  options.isServer = info.rank == 0 && !agentHostsStore;
  // Rank 0 hosting the store of a single-host job (srun or mpirun, not torchrun's agent): a socket
  // of ours on the loopback address itself, where c10d's would listen on every interface. A job
  // across hosts keeps c10d's: the other hosts must reach it.
  if (options.isServer && isLoopback(info.masterAddr)) {
    try {
      options.masterListenFd = listenOnLoopback(info.masterAddr, info.masterPort).fd;  // the store's from here
    } catch (const std::exception& e) {
      throw std::runtime_error("could not host the rendezvous store on " + info.masterAddr + ":" +
                               std::to_string(info.masterPort) + ": " + e.what() +
                               " (MASTER_ADDR, MASTER_PORT). Is another job using the port? Pick another "
                               "MASTER_PORT.");
    }
  }
  options.numWorkers = info.worldSize;
  options.waitWorkers = true;  // every rank registers; the host counts them in
  const int timeoutSeconds = rendezvousTimeoutSeconds();
  options.timeout = std::chrono::seconds(timeoutSeconds);
  const auto start = std::chrono::steady_clock::now();
  try {
    return c10::make_intrusive<c10d::TCPStore>(info.masterAddr, options);
  } catch (const std::exception& e) {
    const std::string where = info.masterAddr + ":" + std::to_string(info.masterPort);
    throw std::runtime_error(
        (options.isServer
             ? "could not host the rendezvous store on port " + std::to_string(info.masterPort)
             : "could not reach the rendezvous store at " + where + " in " +
                   std::to_string(static_cast<int>(
                       std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() + 0.5)) +
                   " s (timeout " + std::to_string(timeoutSeconds) + " s; c10d tries twice)") +
        " (MASTER_ADDR, MASTER_PORT). Is the launcher (torchrun's agent, or rank 0) running there, is the "
        "address right, and is the port open? SHARDSCOPE_RENDEZVOUS_TIMEOUT_S sets the wait. c10d said: " +
        firstLine(e.what()));
  }
}

// One process group among `members` ranks, this rank being `groupRank` of them: its own backend
// over the shared store, under a prefix of its own (as init_process_group and new_group do), inside
// the run's unguessable one under shardscope's controller (engine/launch/run_controller.cpp).
std::unique_ptr<Communicator> connectGroup(const c10::intrusive_ptr<c10d::Store>& tcpStore, const RendezvousInfo& info,
                                           const RankDevice* gpu, RankRecorder& recorder, const std::string& name,
                                           int groupRank, int members, trace::ProcessGroup kind) {
  const char* runPrefix = std::getenv("SHARDSCOPE_STORE_PREFIX");
  const std::string prefix =
      std::string("shardscope/") + (runPrefix && *runPrefix ? std::string(runPrefix) + "/" : "") + name;
  auto store = c10::make_intrusive<c10d::PrefixStore>(prefix, tcpStore);
  RendezvousInfo inGroup = info;
  inGroup.rank = groupRank;
  inGroup.worldSize = members;
  auto backend = gpu ? makeNcclCommunicator(store, inGroup, *gpu) : makeGlooCommunicator(store, inGroup);
  return std::make_unique<RecordingCommunicator>(recorder, std::move(backend), kind);
}

// The (data, tensor) grid of --tp: tensor group r / N of N consecutive ranks, data group r % N.
// `info`: the rank and world of the grid (under --pp, its stage's); `stage`: its groups' names' start.
void connectTensorParallel(ProcessMesh& mesh, const c10::intrusive_ptr<c10d::Store>& store, const RendezvousInfo& info,
                           const RankDevice* gpu, RankRecorder& recorder, int tensorGroupSize,
                           const std::string& stage = "") {
  if (info.worldSize % tensorGroupSize != 0) {
    throw std::runtime_error("--tp " + std::to_string(tensorGroupSize) + " does not divide the world of " +
                             std::to_string(info.worldSize) + " ranks; pass a divisor as --tp.");
  }
  const config::TensorPlace place = config::tensorPlace(info.rank, info.worldSize, tensorGroupSize);
  auto tensor = connectGroup(store, info, gpu, recorder, stage + "tensor_group_" + std::to_string(place.dataRank),
                             place.tensorRank, tensorGroupSize, trace::ProcessGroup::Tensor);
  auto data = connectGroup(store, info, gpu, recorder, stage + "data_group_" + std::to_string(place.tensorRank),
                           place.dataRank, place.dataRanks, trace::ProcessGroup::Data);
  mesh.setTensorParallel(std::move(tensor), std::move(data));
}

// The hybrid strategies' (replicate, shard) grid over the data ranks of `grid` (the world, or under
// --pp its stage's block), one grid per place in a tensor group, as torchtitan's (dp_replicate,
// dp_shard, tp) mesh; nothing for a 1-D mesh. `prefix` starts the groups' names.
std::pair<std::unique_ptr<Communicator>, std::unique_ptr<Communicator>> connectHybridGrid(
    const c10::intrusive_ptr<c10d::Store>& store, const RendezvousInfo& grid, const RankDevice* gpu,
    RankRecorder& recorder, int shardGroupSize, int tensorRanks, const std::string& prefix) {
  const config::TensorPlace data = config::tensorPlace(grid.rank, grid.worldSize, tensorRanks);
  if (shardGroupSize <= 0 || shardGroupSize >= data.dataRanks) return {};
  if (data.dataRanks % shardGroupSize != 0) {
    throw std::runtime_error("a shard group of " + std::to_string(shardGroupSize) + " ranks does not divide the " +
                             std::to_string(data.dataRanks) + " data ranks; pass a divisor as --shard-group-size.");
  }
  const MeshPlace place = meshPlace(data.dataRank, shardGroupSize);
  const std::string column = tensorRanks > 1 ? "_t" + std::to_string(data.tensorRank) : "";
  auto shard =
      connectGroup(store, grid, gpu, recorder, prefix + "shard_group_" + std::to_string(place.shardGroup) + column,
                   place.shardRank, shardGroupSize, trace::ProcessGroup::Shard);
  auto replicate = connectGroup(store, grid, gpu, recorder,
                                prefix + "replicate_group_" + std::to_string(place.replicateGroup) + column,
                                place.replicateRank, data.dataRanks / shardGroupSize, trace::ProcessGroup::Replicate);
  return {std::move(shard), std::move(replicate)};
}

// The (pp, dp, tp) mesh of --pp P: the pipe group of this rank's place in its stage's block, and
// inside the block its (data, tensor) grid, or without --tp its data group, the whole block.
void connectPipeline(ProcessMesh& mesh, const c10::intrusive_ptr<c10d::Store>& store, const RendezvousInfo& info,
                     const RankDevice* gpu, RankRecorder& recorder, int tensorGroupSize, int pipeGroupSize) {
  const config::PipelinePlace place = config::pipelinePlace(info.rank, info.worldSize, pipeGroupSize);
  auto pipe = connectGroup(store, info, gpu, recorder, "pipe_group_" + std::to_string(place.stageRank), place.pipeRank,
                           pipeGroupSize, trace::ProcessGroup::Pipe);
  RendezvousInfo inStage = info;
  inStage.rank = place.stageRank;
  inStage.worldSize = place.stageRanks;
  const std::string stage = "stage_" + std::to_string(place.pipeRank) + "_";
  if (tensorGroupSize > 1) {
    connectTensorParallel(mesh, store, inStage, gpu, recorder, tensorGroupSize, stage);
    mesh.setPipeline(std::move(pipe), nullptr);
    return;
  }
  auto data = connectGroup(store, inStage, gpu, recorder, stage + "data_group", place.stageRank, place.stageRanks,
                           trace::ProcessGroup::Data);
  mesh.setPipeline(std::move(pipe), std::move(data));
}

}  // namespace

std::unique_ptr<ProcessMesh> connectMesh(const RendezvousInfo& info, const RankDevice* gpu, RankRecorder& recorder,
                                         int shardGroupSize, int tensorGroupSize, int pipeGroupSize,
                                         ClockReading* clockToRank0, double clockEverySeconds) {
  const c10::intrusive_ptr<c10d::Store> store = connectStore(info);
  auto world =
      connectGroup(store, info, gpu, recorder, "default_pg", info.rank, info.worldSize, trace::ProcessGroup::World);
  // Every rank is up once the world group is: rank 0 is there to answer. The rounds count their
  // time from the end of this first reading, which every rank leaves together.
  std::unique_ptr<ClockRounds> rounds;
  if (clockToRank0) {
    rounds =
        std::make_unique<ClockRounds>(store, info.rank, info.worldSize, static_cast<int64_t>(clockEverySeconds * 1e9));
    *clockToRank0 = rounds->measure();
  }
  // Under --pp each stage's block of ranks is a mesh of its own, its groups named by its stage.
  const config::PipelinePlace stage = config::pipelinePlace(info.rank, info.worldSize, std::max(1, pipeGroupSize));
  RendezvousInfo grid = info;
  grid.rank = stage.stageRank;
  grid.worldSize = stage.stageRanks;
  const std::string prefix = pipeGroupSize > 1 ? "stage_" + std::to_string(stage.pipeRank) + "_" : "";
  auto hybrid = connectHybridGrid(store, grid, gpu, recorder, shardGroupSize, std::max(1, tensorGroupSize), prefix);
  auto mesh = hybrid.first
                  ? std::make_unique<ProcessMesh>(std::move(world), std::move(hybrid.first), std::move(hybrid.second))
                  : std::make_unique<ProcessMesh>(std::move(world));
  if (pipeGroupSize > 1) {
    connectPipeline(*mesh, store, info, gpu, recorder, tensorGroupSize, pipeGroupSize);
  } else if (tensorGroupSize > 1) {
    connectTensorParallel(*mesh, store, info, gpu, recorder, tensorGroupSize);
  }
  mesh->setClockRounds(std::move(rounds));
  return mesh;
}

}  // namespace shardscope::engine
