#include "trace/format.h"

#include <cstdio>

namespace shardscope::trace {

std::string formatBytes(double b) {
  char buf[32];
  if (b >= 1024.0 * 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  else if (b >= 1024.0 * 1024)
    std::snprintf(buf, sizeof buf, "%.2f MiB", b / (1024.0 * 1024));
  else if (b >= 1024.0)
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%.0f B", b);
  return buf;
}

std::string formatDecimalGB(double bytes) {
  char buf[32];
  const double gb = bytes / 1e9;
  if (gb >= 1000)
    std::snprintf(buf, sizeof buf, "%.0f GB", gb);
  else
    std::snprintf(buf, sizeof buf, "%.3g GB", gb);
  return buf;
}

std::string formatCount(double n) {
  char buf[32];
  if (n >= 1e12)
    std::snprintf(buf, sizeof buf, "%.3gT", n / 1e12);
  else if (n >= 1e9)
    std::snprintf(buf, sizeof buf, "%.3gB", n / 1e9);
  else if (n >= 1e6)
    std::snprintf(buf, sizeof buf, "%.3gM", n / 1e6);
  else if (n >= 1e3)
    std::snprintf(buf, sizeof buf, "%.3gK", n / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.0f", n);
  return buf;
}

std::string formatMilliseconds(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f ms", seconds * 1e3);
  return buf;
}

std::string formatPercent(double percent) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %%", percent);
  return buf;
}

std::string formatRatio(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", ratio);
  return buf;
}

std::string formatRate(double value, const char* unit) {
  char buf[32];
  if (value >= 1e9)
    std::snprintf(buf, sizeof buf, "%.2f G%s", value / 1e9, unit);
  else if (value >= 1e6)
    std::snprintf(buf, sizeof buf, "%.2f M%s", value / 1e6, unit);
  else if (value >= 1e3)
    std::snprintf(buf, sizeof buf, "%.2f k%s", value / 1e3, unit);
  else
    std::snprintf(buf, sizeof buf, *unit ? "%.1f %s" : "%.1f", value, unit);  // no unit: no space after it
  return buf;
}

std::string formatDuration(double ns) {
  char buf[32];
  if (ns >= 1e9)
    std::snprintf(buf, sizeof buf, "%.3f s", ns / 1e9);
  else if (ns >= 1e6)
    std::snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
  else if (ns >= 1e3)
    std::snprintf(buf, sizeof buf, "%.1f us", ns / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.0f ns", ns);
  return buf;
}

std::string formatRanks(const std::vector<int>& ascending) {
  std::string out;
  for (size_t i = 0; i < ascending.size();) {
    size_t j = i;
    while (j + 1 < ascending.size() && ascending[j + 1] == ascending[j] + 1) ++j;
    out += out.empty() ? "" : ", ";
    if (j >= i + 2) {
      out += std::to_string(ascending[i]) + " to " + std::to_string(ascending[j]);
      i = j + 1;
    } else {
      out += std::to_string(ascending[i]);
      ++i;
    }
  }
  return out;
}

}  // namespace shardscope::trace
