// The sidebar's "Open a recording" (Ctrl+O): a run's trace or summary, a launched job's directory,
// or a PyTorch job's torch.profiler traces, opened in place of the sessions shown or beside them
// (a PyTorch job next to shardscope's run of the same model). A path field and a listing of its
// folder that names what each entry would open as: a click picks, a double click goes into a
// folder or opens a recording; a PyTorch job's per-rank files can be ticked to open together. The
// reading runs on the controller's thread (EngineControl::openRecord); the panel shows where it
// stands.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "ui/session_store.h"

namespace shardscope::ui {

struct RecordEntry {
  std::string path;
  std::string name;  // as listed ("../" for the parent)
  bool directory = false;
  std::string kind;  // what it opens as (recordings::describePath), or "" for a folder to go into
};

struct OpenChoice {
  char path[1024] = ".";
  bool expand = false;  // Ctrl+O: open the header and put the cursor in the path field
  bool focusPath = false;
  std::string listedFolder;  // the folder `entries` lists (re-listed when the path leaves it)
  std::string picked;        // the path a click in the listing put in the field
  std::string followed;      // the path the listing was last looked up for
  std::vector<RecordEntry> entries;
  size_t unlisted = 0;           // files in it that are none of the kinds (not shown)
  size_t unexamined = 0;         // entries past the most a listing looks into
  std::set<std::string> ticked;  // torch.profiler traces to open together
  bool beside = false;           // add what is opened to the sessions shown (e.g. a run beside a job)
  std::string message;           // why the last Open did not start, or ""
  uint64_t seenFinished = 0;     // the last finished open the window has taken in (OpenStatus)
};

enum class OpenAction { None, Open };

// `busy`: a run, listen or open is under way. On Open, `paths` holds what to open: the ticked
// traces, or the path typed or picked.
OpenAction drawOpenPanel(OpenChoice& choice, bool busy, const OpenStatus& status, std::vector<std::string>& paths);

// The folder a path field lists: the path when it is a directory, else the folder it is in.
std::string folderToList(const std::string& path);

// The folder's entries: its parent, its subfolders, and the files that are a recording, by name.
std::vector<RecordEntry> listRecordFolder(const std::string& folder, size_t& unlisted, size_t& unexamined);

}  // namespace shardscope::ui
