// Tests name strategies and modes as the CLI does ("full_shard"); this reads one into its enum and
// fails the test loudly on a name no table has.
#pragma once

#include <stdexcept>
#include <string>

#include "config/modes.h"

namespace shardscope::testing {

template <typename E>
E modeOf(const std::string& name) {
  const auto value = config::parseMode<E>(name);
  if (!value) throw std::invalid_argument(config::unknownModeMessage<E>(name));
  return *value;
}

}  // namespace shardscope::testing
