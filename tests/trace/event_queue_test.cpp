#include "trace/event_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

namespace shardscope::trace {
namespace {

struct Item {
  int producer = -1;
  int sequence = -1;
};

TEST(EventQueue, FullQueueRefusesInsteadOfBlocking) {
  BoundedEventQueue<Item> q(4);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(q.tryPush({0, i}));
  EXPECT_FALSE(q.tryPush({0, 4}));
  Item out;
  ASSERT_TRUE(q.tryPop(out));
  EXPECT_EQ(out.sequence, 0);
  EXPECT_TRUE(q.tryPush({0, 5}));
}

// Seeded stress: producers push with random pauses while one consumer drains; every item either
// arrives exactly once, in its producer's order, or was refused and counted.
TEST(EventQueue, StressManyProducersOneConsumer) {
  for (uint32_t seed : {1u, 7u, 42u}) {
    BoundedEventQueue<Item> q(256);
    constexpr int kProducers = 4, kItems = 20000;
    std::atomic<int> refused{0};
    std::atomic<bool> done{false};
    std::vector<std::thread> producers;
    for (int p = 0; p < kProducers; ++p) {
      producers.emplace_back([&, p] {
        std::mt19937 rng(seed * 31 + p);
        for (int i = 0; i < kItems; ++i) {
          if (!q.tryPush({p, i})) refused.fetch_add(1);
          if (rng() % 64 == 0) std::this_thread::yield();
        }
      });
    }
    std::vector<int> last(kProducers, -1);
    int received = 0;
    std::thread consumer([&] {
      Item item;
      for (;;) {
        bool got = q.tryPop(item);
        if (!got) {
          if (done.load()) {
            if (!q.tryPop(item)) break;
          } else {
            std::this_thread::yield();
            continue;
          }
        }
        ASSERT_GT(item.sequence, last[item.producer]) << "producer order broken";
        last[item.producer] = item.sequence;
        ++received;
      }
    });
    for (auto& t : producers) t.join();
    done.store(true);
    consumer.join();
    EXPECT_EQ(received + refused.load(), kProducers * kItems) << "seed " << seed;
    EXPECT_GT(received, 0);
  }
}

// What a writer's helper watches (engine/recording/catch_up_turns.h): how full the queue is.
TEST(BoundedEventQueue, SaysAboutHowManyItHoldsAsItFillsAndDrainsAndWraps) {
  BoundedEventQueue<int> q(8);
  int out = 0;
  for (int round = 0; round < 3; ++round) {  // past the end of the ring twice
    for (int i = 0; i < 6; ++i) {
      ASSERT_TRUE(q.tryPush(i));
      EXPECT_EQ(q.approximateSize(), static_cast<size_t>(i + 1));
    }
    for (int i = 5; i >= 0; --i) {
      ASSERT_TRUE(q.tryPop(out));
      EXPECT_EQ(q.approximateSize(), static_cast<size_t>(i));
    }
  }
  for (int i = 0; i < 9; ++i) q.tryPush(i);  // the ninth is refused
  EXPECT_EQ(q.approximateSize(), q.capacity());
}

}  // namespace
}  // namespace shardscope::trace
