// Reading a large recording takes seconds (a 20,000-step run's 870 MB trace, 7 s; a 1.8 GB JSON
// trace, 23 s), and the terminal says so instead of staying silent. On a terminal, one line
// rewritten every half second ("shardscope view: reading t.pftrace: 45% of 830.00 MiB") and cleared
// when the reading ends; in a log, one line. Recordings under `minBytes`, and readings over within
// the first half second (a file refused on its first bytes), say nothing.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "files/read_progress.h"

namespace shardscope::app {

// "45% of 830.00 MiB" (trace::formatBytes), or the size alone where the share cannot be told: the
// terminal's line and the app's Open panel.
std::string describeReading(const files::ReadProgress& progress);

class ReadingNotice {
 public:
  static constexpr uint64_t kDefaultMinBytes = uint64_t{64} << 20;
  struct Options {
    std::FILE* out = stderr;
    bool terminal = false;  // rewrite one line in place (stderr is a terminal)
    uint64_t minBytes = kDefaultMinBytes;
    std::chrono::milliseconds every{500};  // the first line's wait, and how often a terminal's is rewritten
  };
  // From now until the object ends: `paths` being read by `command` ("shardscope view").
  ReadingNotice(const std::string& command, const std::vector<std::string>& paths, Options options);
  // As above, to stderr, in place where stderr is a terminal.
  ReadingNotice(const std::string& command, const std::vector<std::string>& paths);
  ~ReadingNotice();
  ReadingNotice(const ReadingNotice&) = delete;
  ReadingNotice& operator=(const ReadingNotice&) = delete;

 private:
  void tell();

  files::ReadProgress progress_;
  std::string prefix_;  // "shardscope view: reading t.pftrace" (the whole path in a log)
  Options options_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread ticker_;
};

}  // namespace shardscope::app
