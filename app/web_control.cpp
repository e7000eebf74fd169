#include "app/web_control.h"

#include "ui/record_files.h"

namespace shardscope::app {

std::string WebControl::runsUnavailable() const {
  return "this page views recordings and estimates; running and comparing need the full build "
         "(scripts/build.sh, then 'shardscope')";
}

// Read where it is asked, as the page has one thread: the window shows it from its next frame, as
// it shows what the desktop's worker thread read (OpenStatus::finished).
std::string WebControl::openRecord(const std::vector<std::string>& paths, bool beside) {
  if (paths.empty()) return "nothing to open";
  ui::OpenedRecord record = ui::openRecord(paths, trace::kDefaultDetailEvents);
  status_.what = paths.front();
  status_.beside = beside;
  status_.error = record.error;
  status_.notes = record.notes;
  status_.ownConfig = record.ownConfig;
  status_.config = record.config;
  ++status_.finished;
  if (!record.error.empty()) return "";  // said by the status, as a failed read on the desktop is
  auto lock = store_.lock();
  if (!beside) store_.clear();
  for (auto& s : record.sessions) store_.add(std::move(s));
  return "";
}

}  // namespace shardscope::app
