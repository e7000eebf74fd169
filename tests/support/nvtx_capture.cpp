// An NVTX tool for tests, loaded the way nsys loads its own (NVTX_INJECTION64_PATH): it takes over
// the domain calls shardscope makes and writes each push and pop, with its thread, to
// $SHARDSCOPE_NVTX_CAPTURE.<pid>, so a test can compare the ranges a rank emitted with its trace.
#include <nvtx3/nvToolsExt.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

namespace {

std::mutex gMutex;
FILE* gOut = nullptr;

void writeLine(const std::string& line) {
  std::lock_guard<std::mutex> lock(gMutex);
  if (!gOut) {
    const char* base = std::getenv("SHARDSCOPE_NVTX_CAPTURE");
    if (!base) return;
    gOut = std::fopen((std::string(base) + "." + std::to_string(getpid())).c_str(), "w");
    if (!gOut) return;
  }
  std::fputs(line.c_str(), gOut);
  std::fflush(gOut);  // ranks may end with _exit
}

std::string threadId() { return std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id())); }

// A domain's handle is the name it was created with (kept for the process's life).
nvtxDomainHandle_t NVTX_API createDomain(const char* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(new std::string(name ? name : ""));
}

const std::string& domainName(nvtxDomainHandle_t domain) {
  static const std::string none = "(default)";
  return domain ? *reinterpret_cast<const std::string*>(domain) : none;
}

int NVTX_API pushRange(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  const char* message =
      attributes && attributes->messageType == NVTX_MESSAGE_TYPE_ASCII ? attributes->message.ascii : "";
  writeLine("push\t" + threadId() + "\t" + domainName(domain) + "\t" + message + "\n");
  return 0;
}

int NVTX_API popRange(nvtxDomainHandle_t domain) {
  writeLine("pop\t" + threadId() + "\t" + domainName(domain) + "\n");
  return 0;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t getTable) {
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(getTable(NVTX_ETID_CALLBACKS));
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!callbacks || !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size)) return 0;
  if (size < NVTX_CBID_CORE2_DomainCreateA) return 0;
  *table[NVTX_CBID_CORE2_DomainCreateA] = reinterpret_cast<NvtxFunctionPointer>(&createDomain);
  *table[NVTX_CBID_CORE2_DomainRangePushEx] = reinterpret_cast<NvtxFunctionPointer>(&pushRange);
  *table[NVTX_CBID_CORE2_DomainRangePop] = reinterpret_cast<NvtxFunctionPointer>(&popRange);
  return 1;
}
