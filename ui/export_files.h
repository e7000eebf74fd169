// The app's Export tab: writes what the app shows (each session's Chrome trace or memory CSV) next
// to a file name base the user typed, with the same writers the command line uses.
#pragma once

#include <string>
#include <vector>

#include "ui/session_store.h"

namespace shardscope::ui {

enum class ExportFormat { TraceJson, MemoryCsv };

// One file per session: BASE.json / BASE.csv, or BASE.<strategy>.json when there are several (a
// compare). Returns one line per file saying what happened (or why nothing was written), for the
// tab to show.
std::string exportSessions(const std::vector<Session>& sessions, const std::string& base, ExportFormat format);

}  // namespace shardscope::ui
