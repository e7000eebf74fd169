// Human-readable sizes and durations, one spelling for the CLI tables and the app.
#pragma once

#include <string>

namespace shardscope::trace {

std::string formatBytes(double bytes);    // "812 B", "14.4 KiB", "2.45 MiB", "1.02 GiB"
std::string formatDuration(double ns);    // "850 ns", "12.5 us", "3.21 ms", "1.204 s"

}  // namespace shardscope::trace
