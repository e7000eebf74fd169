// ProcessGroupGloo for CPU ranks. Gloo talks over TCP: on one host through the loopback interface,
// so ranks exchange real bytes through the kernel's network stack; across hosts through the
// interface that reaches MASTER_ADDR.
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "engine/comm/backend_factories.h"
#include "engine/comm/c10d_communicator.h"

namespace shardscope::engine {

namespace {

// How long a collective may wait for its peers: 5 minutes, or SHARDSCOPE_GLOO_TIMEOUT_MS (the
// step-gate tests shorten it to show that waiting at the gate never trips it).
// --collective-timeout, unless a test sets SHARDSCOPE_GLOO_TIMEOUT_MS (under a second).
std::chrono::milliseconds collectiveTimeout(const RendezvousInfo& info) {
  if (const char* text = std::getenv("SHARDSCOPE_GLOO_TIMEOUT_MS")) {
    const long long ms = std::atoll(text);
    if (ms > 0) return std::chrono::milliseconds(ms);
  }
  return std::chrono::milliseconds(static_cast<int64_t>(info.collectiveTimeoutS * 1000));
}

// This host's address on the route to `master` (a UDP socket "connected" there sends nothing; the
// kernel picks the source address it would use), or "" when none is found.
std::string localAddressToward(const std::string& master) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(master.c_str(), "9", &hints, &found) != 0 || !found) return "";
  std::string address;
  const int fd = ::socket(found->ai_family, SOCK_DGRAM, 0);
  sockaddr_storage local{};
  socklen_t length = sizeof local;
  char text[NI_MAXHOST] = {0};
  if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0 &&
      ::getnameinfo(reinterpret_cast<sockaddr*>(&local), length, text, sizeof text, nullptr, 0, NI_NUMERICHOST) == 0) {
    address = text;
  }
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(found);
  return address;
}

// Where this rank's Gloo listens and connects from: GLOO_SOCKET_IFNAME's interface when set (as
// PyTorch reads it), else this host's address toward MASTER_ADDR: the loopback for a one-host job,
// the interface the other hosts reach for a job across hosts (binding MASTER_ADDR itself, as
// before, failed on every host but the master's).
std::shared_ptr<::gloo::transport::Device> glooDevice(const std::string& master) {
  if (const char* interface = std::getenv("GLOO_SOCKET_IFNAME"); interface && *interface) {
    return c10d::ProcessGroupGloo::createDeviceForInterface(interface);
  }
  const std::string local = localAddressToward(master);
  return c10d::ProcessGroupGloo::createDeviceForHostname(local.empty() ? master : local);
}

// Gloo in LibTorch 2.11 implements _reduce_scatter_base natively. Older Gloo builds do not;
// SHARDSCOPE_GLOO_REDUCE_SCATTER=all_reduce selects the composed version (all-reduce, keep this
// rank's slice), which the events then name, so both paths stay tested.
//
// Gloo's own all-gather stages the whole output in a flat buffer of its own and copies it out, and
// on a 2-core host it moved 92 MB in about 130 ms where one in-place broadcast from each rank took
// about 30 ms (docs/benchmarks.md). So ranks all-gather by broadcasts unless
// SHARDSCOPE_GLOO_ALL_GATHER=native asks for Gloo's own.
CollectiveRecipes glooRecipes() {
  CollectiveRecipes recipes;
  const char* reduceScatter = std::getenv("SHARDSCOPE_GLOO_REDUCE_SCATTER");
  recipes.nativeReduceScatter = !(reduceScatter && std::string(reduceScatter) == "all_reduce");
  const char* allGatherSetting = std::getenv("SHARDSCOPE_GLOO_ALL_GATHER");
  const std::string allGather = allGatherSetting ? allGatherSetting : "";
  if (!allGather.empty() && allGather != "native" && allGather != "broadcasts") {
    throw std::runtime_error("SHARDSCOPE_GLOO_ALL_GATHER is '" + allGather +
                             "'; it takes 'broadcasts' (the default) or 'native' (Gloo's own "
                             "all-gather). Unset it or set one of those");
  }
  recipes.allGatherFromBroadcasts = allGather != "native";
  return recipes;
}

std::string recipesText(const CollectiveRecipes& recipes) {
  return std::string("all_gather=") + (recipes.allGatherFromBroadcasts ? "broadcasts" : "native") +
         " reduce_scatter=" + (recipes.nativeReduceScatter ? "native" : "all_reduce");
}

// Every rank must compose its collectives alike: one rank's all-gather against its peers'
// broadcasts would pair different ops in Gloo and wait out the timeout. Under torchrun across
// hosts each host has its own environment, so the ranks compare settings through the store first.
void requireSameRecipesOnEveryRank(c10d::Store& store, const RendezvousInfo& info, const CollectiveRecipes& recipes) {
  const std::string mine = recipesText(recipes);
  auto keyOf = [](int rank) { return "gloo_recipes/" + std::to_string(rank); };
  store.set(keyOf(info.rank), std::vector<uint8_t>(mine.begin(), mine.end()));
  std::vector<std::string> keys;
  for (int rank = 0; rank < info.worldSize; ++rank) keys.push_back(keyOf(rank));
  const auto values = store.multiGet(keys);  // waits for every rank's; one round trip on a TCPStore
  // Every rank says it has read them all. A rank that refuses waits for that before it exits: rank
  // 0 hosts the store, and leaving at once would take it away from a rank still reading, which
  // would then fail with the store's "Connection was likely closed" instead of this message.
  const std::string readKey = "gloo_recipes/read";
  store.add(readKey, 1);
  auto waitUntilAllRead = [&] {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    try {
      while (store.add(readKey, 0) < info.worldSize && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    } catch (const std::exception&) {
      // The store's host has left, everyone having read: nothing more to wait for.
    }
  };
  for (int rank = 0; rank < info.worldSize; ++rank) {
    const std::string theirs(values[rank].begin(), values[rank].end());
    if (theirs != mine) {
      waitUntilAllRead();
      throw std::runtime_error("this rank composes its collectives as '" + mine + "' and rank " + std::to_string(rank) +
                               " as '" + theirs +
                               "' (SHARDSCOPE_GLOO_ALL_GATHER, SHARDSCOPE_GLOO_REDUCE_SCATTER): "
                               "set them alike on every host, or unset them");
    }
  }
}

}  // namespace

std::unique_ptr<Communicator> makeGlooCommunicator(const c10::intrusive_ptr<c10d::Store>& store,
                                                   const RendezvousInfo& info) {
  const CollectiveRecipes recipes = glooRecipes();  // a bad setting is refused before connecting
  requireSameRecipesOnEveryRank(*store, info, recipes);
  auto options = c10d::ProcessGroupGloo::Options::create();
  options->timeout = collectiveTimeout(info);
  options->devices.push_back(glooDevice(info.masterAddr));
  auto backend = c10::make_intrusive<c10d::ProcessGroupGloo>(store, info.rank, info.worldSize, options);
  return std::make_unique<C10dCommunicator>(backend, store, "gloo", recipes);
}

}  // namespace shardscope::engine
