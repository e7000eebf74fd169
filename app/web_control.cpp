#include "app/web_control.h"

#include <filesystem>
#include <utility>

#include "trace/format.h"
#include "ui/record_files.h"

namespace shardscope::app {

std::string WebControl::runsUnavailable() const {
  return "this page views recordings and estimates; running and comparing need the full build "
         "(scripts/build.sh, then 'shardscope')";
}

std::string WebControl::openRecord(const std::vector<std::string>& paths, bool beside) {
  if (paths.empty()) return "nothing to open";
  if (status_.reading) return "a recording is being read: open this one once it is shown";
  asked_ = paths;
  status_.reading = true;
  status_.what = paths.front();
  status_.beside = beside;
  std::error_code error;
  const auto bytes = std::filesystem::is_regular_file(paths.front(), error)
                         ? std::filesystem::file_size(paths.front(), error)
                         : std::uintmax_t{0};
  status_.progress = bytes > 0
                         ? "(" + trace::formatBytes(static_cast<double>(bytes)) + "; the page waits while it reads)"
                         : "(the page waits while it reads)";
  return "";
}

// Read on the page's one thread, where the desktop reads on a worker: the window shows it from its
// next frame, as it shows what that worker read (OpenStatus::finished).
void WebControl::readAsked() {
  if (!status_.reading) return;
  const std::vector<std::string> paths = std::exchange(asked_, {});
  const bool beside = status_.beside;
  ui::OpenedRecord record = ui::openRecord(paths, trace::kDefaultDetailEvents);
  status_.reading = false;
  status_.progress.clear();
  status_.error = record.error;
  status_.notes = record.notes;
  status_.ownConfig = record.ownConfig;
  status_.config = record.config;
  ++status_.finished;
  if (!record.error.empty()) return;  // said by the status, as a failed read on the desktop is
  auto lock = store_.lock();
  if (!beside) store_.clear();
  for (auto& s : record.sessions) store_.add(std::move(s));
}

}  // namespace shardscope::app
