#include "estimate/parse_quantity.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace shardscope::estimate {

namespace {

// The whole text as one finite number (strtod accepts "7e9"; anything left over is an error).
std::optional<double> number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::vector<std::string> splitCommas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream s(text);
  for (std::string part; std::getline(s, part, ',');) parts.push_back(part);
  if (!text.empty() && text.back() == ',') parts.emplace_back();
  return parts;
}

}  // namespace

std::optional<double> parseCount(const std::string& text) {
  if (text.empty()) return std::nullopt;
  double scale = 1;
  std::string digits = text;
  switch (std::toupper(static_cast<unsigned char>(text.back()))) {
    case 'K':
      scale = 1e3;
      break;
    case 'M':
      scale = 1e6;
      break;
    case 'B':
    case 'G':
      scale = 1e9;
      break;
    case 'T':
      scale = 1e12;
      break;
    default:
      break;
  }
  if (scale != 1) digits.pop_back();
  auto v = number(digits);
  if (!v || *v <= 0) return std::nullopt;
  const double count = *v * scale;
  if (count < 1 || count > kMaxCount) return std::nullopt;  // a fraction of a parameter, or past 1000T
  return count;
}

std::optional<BytesPerParameter> parseBytesPerParameter(const std::string& text) {
  const auto parts = splitCommas(text);
  if (parts.size() != 3) return std::nullopt;
  double values[3];
  for (int i = 0; i < 3; ++i) {
    auto v = number(parts[i]);
    if (!v || *v < 0) return std::nullopt;
    values[i] = *v;
  }
  return BytesPerParameter{values[0], values[1], values[2]};
}

std::optional<std::vector<int>> parseWorlds(const std::string& text) {
  std::vector<int> worlds;
  for (const auto& part : splitCommas(text)) {
    auto v = number(part);
    if (!v || *v < 1 || *v > 1e6 || *v != std::floor(*v)) return std::nullopt;
    worlds.push_back(static_cast<int>(*v));
  }
  if (worlds.empty()) return std::nullopt;
  return worlds;
}

std::optional<double> parsePercent(const std::string& text) {
  std::string digits = text;
  if (!digits.empty() && digits.back() == '%') digits.pop_back();
  auto v = number(digits);
  if (!v || !(*v >= 0 && *v < 100)) return std::nullopt;
  return *v / 100.0;
}

}  // namespace shardscope::estimate
