#include "app/terminal_gate.h"

#include <poll.h>
#include <unistd.h>

#include <cstdio>

namespace shardscope::app {

void TerminalGate::show(const engine::GateStatus& status) {
  if (status.released || status.waiting < status.ranks || status.ranks == 0) return;
  const std::string where = status.next + " (step " + std::to_string(status.step + 1) + ")";
  if (where == shown_) return;
  shown_ = where;
  std::printf("paused: all %d ranks wait before %s  [Enter / c / q]\n", status.ranks, where.c_str());
  std::fflush(stdout);
}

engine::GateCommand TerminalGate::command() {
  if (inputEnded_) return engine::GateCommand::Continue;
  pollfd input{inputFd_, POLLIN, 0};
  if (pending_.find('\n') == std::string::npos && ::poll(&input, 1, 0) > 0) {
    char buffer[256];
    const ssize_t n = ::read(inputFd_, buffer, sizeof buffer);
    if (n <= 0) {
      inputEnded_ = true;
      return engine::GateCommand::Continue;
    }
    pending_.append(buffer, static_cast<size_t>(n));
  }
  const auto newline = pending_.find('\n');
  if (newline == std::string::npos) return engine::GateCommand::None;
  std::string line = pending_.substr(0, newline);
  pending_.erase(0, newline + 1);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  if (line == "q") {
    stop_ = true;
    return engine::GateCommand::None;
  }
  if (line == "c") return engine::GateCommand::Continue;
  if (!line.empty()) {
    std::printf(
        "'%s' is not a step-gate command: press Enter to go on by one, c + Enter to "
        "continue, q + Enter to stop.\n",
        line.c_str());
    std::fflush(stdout);
    return engine::GateCommand::None;
  }
  return engine::GateCommand::Step;
}

}  // namespace shardscope::app
