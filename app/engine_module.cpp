#include "app/engine_module.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <stdexcept>

namespace shardscope::app {

namespace {

#ifdef SHARDSCOPE_VIEWER_ONLY
const engine::EngineEntry* load() {
  throw std::runtime_error(
      "this is shardscope-viewer, built without the training engine (-DSHARDSCOPE_BUILD_ENGINE=OFF): it opens "
      "recordings and estimates. Running and comparing need the full build: "
      "scripts/build.sh builds 'shardscope' with the engine (LibTorch)");
}
#else
// SHARDSCOPE_ENGINE_MODULE, else beside this executable (the build puts it in app/), else where
// the build wrote it (a test binary in tests/ runs the same module).
std::string modulePath() {
  if (const char* named = std::getenv("SHARDSCOPE_ENGINE_MODULE"); named && *named) return named;
  const auto beside = std::filesystem::path(selfExecutable()).parent_path() / "libshardscope_engine.so";
  std::error_code missing;
  if (std::filesystem::exists(beside, missing)) return beside.string();
  return SHARDSCOPE_ENGINE_MODULE_BUILT;
}

const engine::EngineEntry* load() {
  const std::string path = modulePath();
  // Local: the module keeps its own copies of the libraries both link, and none of its names
  // reach what is loaded after it.
  void* module = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!module) {
    throw std::runtime_error("the training engine (" + path + ") could not be loaded: " + ::dlerror() +
                             ". Build it (scripts/build.sh builds it beside the shardscope executable), or name it "
                             "with SHARDSCOPE_ENGINE_MODULE=FILE");
  }
  using EntryFunction = const engine::EngineEntry* (*)();
  auto entry = reinterpret_cast<EntryFunction>(::dlsym(module, engine::kEngineEntrySymbol));
  const engine::EngineEntry* table = entry ? entry() : nullptr;
  if (!table || table->layout != engine::kEngineEntryLayout) {
    throw std::runtime_error("'" + path +
                             "' is not the training engine this shardscope was built with: rebuild both "
                             "(scripts/build.sh), or name the right one with SHARDSCOPE_ENGINE_MODULE=FILE");
  }
  // The spans the module records must name what this executable reads.
  table->useNames(trace::namesInUse());
  // Its partial files must be where this executable's second Ctrl-C looks (app/interrupt.cpp).
  table->useUnfinishedOutputs(files::unfinishedOutputsInUse());
  return table;  // never unloaded: LibTorch's threads and handlers outlive any caller
}
#endif

}  // namespace

bool engineBuilt() {
#ifdef SHARDSCOPE_VIEWER_ONLY
  return false;
#else
  return true;
#endif
}

std::string selfExecutable() {
  char path[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return "shardscope";
  path[n] = '\0';
  return path;
}

const engine::EngineEntry& engine() {
  static std::once_flag once;
  static const engine::EngineEntry* table = nullptr;
  std::call_once(once, [] { table = load(); });  // a throw leaves `once` unset: the next call tries again
  return *table;
}

engine::RunResult runTraining(const config::RunConfig& config, const std::string& workerExecutable,
                              const engine::RunCallbacks& callbacks, const engine::RecordingSink& sink) {
  return engine().runTraining(config, workerExecutable, callbacks, sink);
}

int runRankWorker(const config::RunConfig& config, const engine::WorkerRecording& recording) {
  return engine().runRankWorker(config, recording);
}

std::optional<std::string> checkDeviceAvailable(const config::RunConfig& config) {
  if (config.device != config::DeviceKind::Cuda) return std::nullopt;
  return engine().checkDeviceAvailable(config);
}

}  // namespace shardscope::app
