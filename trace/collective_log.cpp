#include "trace/collective_log.h"

namespace shardscope::trace {

std::string shapesText(const std::vector<std::vector<int64_t>>& shapes) {
  if (shapes.empty()) return "[]";
  std::string out;
  for (const auto& shape : shapes) {
    if (!out.empty()) out += ", ";
    out += "[";
    for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
    out += "]";
  }
  return out;
}

std::string groupLabel(const CollectiveLogs& logs, const std::string& group) {
  const auto description = logs.groupDescriptions.find(group);
  const bool described =
      description != logs.groupDescriptions.end() && !description->second.empty() && description->second != group;
  return "group " + group + (described ? " (" + description->second + ")" : "");
}

std::string describeCollective(const LoggedCollective& c) {
  std::string out = c.op + (c.label.empty() ? "" : " " + c.label) + " " + shapesText(c.inputSizes);
  if (!c.inputDtypes.empty()) out += " " + c.inputDtypes.front();
  return out;
}

}  // namespace shardscope::trace
