#include "engine/recording/nvtx_ranges.h"

#include <cstdlib>

#ifdef SHARDSCOPE_HAS_NVTX  // engine/CMakeLists.txt: where NVTX's headers were found
#include <nvtx3/nvToolsExt.h>
#endif

namespace shardscope::engine {

bool nvtxListening() {
#ifdef SHARDSCOPE_HAS_NVTX
  static const bool listening = std::getenv("NVTX_INJECTION64_PATH") != nullptr;
  return listening;
#else
  return false;
#endif
}

#ifdef SHARDSCOPE_HAS_NVTX
namespace {

nvtxDomainHandle_t shardscopeDomain() {
  static const nvtxDomainHandle_t domain = nvtxDomainCreateA("shardscope");
  return domain;
}

}  // namespace
#endif

void NvtxRange::push(const std::string& name) {
#ifdef SHARDSCOPE_HAS_NVTX
  if (!nvtxListening() || pushed_) return;
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = name.c_str();  // the tool copies it before the push returns
  nvtxDomainRangePushEx(shardscopeDomain(), &attributes);
  pushed_ = true;
#else
  (void)name;
#endif
}

NvtxRange::~NvtxRange() {
#ifdef SHARDSCOPE_HAS_NVTX
  if (pushed_) nvtxDomainRangePop(shardscopeDomain());
#endif
}

}  // namespace shardscope::engine
