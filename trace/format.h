// Human-readable sizes and durations, one spelling for the CLI tables and the app.
#pragma once

#include <string>
#include <vector>

namespace shardscope::trace {

std::string formatBytes(double bytes);                       // "812 B", "14.4 KiB", "2.45 MiB", "1.02 GiB"
std::string formatDecimalGB(double bytes);                   // "52.5 GB", "105 GB", "1120 GB": 10^9 bytes, as the
                                                             // seed documents and GPU data sheets count
std::string formatCount(double n);                           // "70B", "1.3B", "3.3M", "512": parameter counts
std::string formatRate(double value, const char* unit);      // "812.0 tok/s", "12.35 ktok/s", "1.20 Mtok/s"
std::string formatDuration(double ns);                       // "850 ns", "12.5 us", "3.21 ms", "1.204 s"
std::string formatMilliseconds(double seconds);              // "12.3 ms": step times side by side, one unit
std::string formatPercent(double percent);                   // "42.5 %"
std::string formatRatio(double ratio);                       // "0.75x"
std::string formatRanks(const std::vector<int>& ascending);  // "0, 2, 5 to 127": runs of three or more as ranges

}  // namespace shardscope::trace
