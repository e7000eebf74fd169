#include "ui/session_store.h"

namespace shardscope::ui {

bool anyRecording(const std::vector<Session>& sessions, bool gatedToo) {
  for (const auto& s : sessions) {
    const bool recording = s.status == SessionStatus::Starting || s.status == SessionStatus::Running;
    if (recording && (gatedToo || !s.gate.gated)) return true;
  }
  return false;
}

int SessionStore::add(Session session) {
  sessions_.push_back(std::move(session));
  ++version_;
  return static_cast<int>(sessions_.size()) - 1;
}

}  // namespace shardscope::ui
