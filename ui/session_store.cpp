#include "ui/session_store.h"

namespace shardscope::ui {

int SessionStore::add(Session session) {
  sessions_.push_back(std::move(session));
  ++version_;
  return static_cast<int>(sessions_.size()) - 1;
}

}  // namespace shardscope::ui
