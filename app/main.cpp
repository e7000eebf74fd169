// shardscope: the one executable. Subcommands:
//   run      train headlessly: one process per rank, progress per step
//   worker   one rank (started by `run`, or by torchrun/srun/mpirun with their variables)
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>

#include "app/cli_options.h"
#include "engine/rank_worker.h"
#include "engine/run_controller.h"

namespace {

std::string selfExecutable() {
  char path[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return "shardscope";
  path[n] = '\0';
  return path;
}

int failUsage(const std::string& message) {
  std::fprintf(stderr, "shardscope: error: %s\n", message.c_str());
  return 2;
}

int runHeadless(const shardscope::RunConfig& config) {
  std::printf("shardscope run: %s, %d layers, hidden %d, %s (%s), world %d, batch %d, %d steps, %s\n",
              config.model.c_str(), config.layers, config.hidden, config.strategy.c_str(),
              shardscope::zeroName(config.strategy), config.world, config.batch, config.steps,
              config.device.c_str());
  std::fflush(stdout);
  shardscope::RunCallbacks callbacks;
  callbacks.onStep = [&](int step, double loss, double seconds) {
    std::printf("step %d/%d  loss %.6f  step time %.1f ms\n", step + 1, config.steps, loss,
                seconds * 1e3);
    std::fflush(stdout);
  };
  auto result = shardscope::runTraining(config, selfExecutable(), callbacks);
  if (!result.ok) {
    std::fprintf(stderr, "shardscope: run failed: %s\n", result.error.c_str());
    return 1;
  }
  std::printf("done: %d ranks on %s, %lld parameters\n", result.worldSize,
              result.deviceDescription.c_str(), static_cast<long long>(result.parameterCount));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "shardscope: run real DDP and FSDP training across rank processes and see what each rank\n"
      "holds in memory and sends over the wire."};
  app.require_subcommand(0, 1);
  app.footer("Run 'shardscope COMMAND --help' for the options of a command.\n"
             "With no command, shardscope runs a small demo: gpt, full_shard, 4 ranks, 5 steps.");

  shardscope::app::RunOptions runOptions;
  auto* run = app.add_subcommand("run", "train headlessly, one OS process per rank");
  runOptions.addTo(*run);

  shardscope::app::RunOptions workerOptions;
  auto* worker = app.add_subcommand(
      "worker", "run one rank; reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT "
                "(as set by torchrun)");
  workerOptions.addTo(*worker);

  CLI11_PARSE(app, argc, argv);

  if (worker->parsed()) {
    shardscope::RunConfig config;
    if (auto err = workerOptions.resolve(config)) return failUsage(*err);
    return shardscope::runRankWorker(config);
  }

  shardscope::RunConfig config;
  if (run->parsed()) {
    if (auto err = runOptions.resolve(config)) return failUsage(*err);
  } else {
    config.model = "gpt";
    config.strategy = "full_shard";
    config.world = 4;
    config.steps = 5;
  }
  if (auto err = shardscope::validate(config)) return failUsage(*err);
  if (auto err = shardscope::checkDeviceAvailable(config)) return failUsage(*err);
  return runHeadless(config);
}
