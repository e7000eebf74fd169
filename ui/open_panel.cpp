#include "ui/open_panel.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include <imgui.h>

#include "recordings/readers.h"
#include "ui/item_probe.h"
#include "ui/theme.h"
#include "ui/record_files.h"

namespace shardscope::ui {

namespace fs = std::filesystem;

namespace {

// A listing looks into every entry of the folder (the start and end of a JSON file, a subfolder's
// names; ui/record_files.h), on the window's thread: past this many entries the rest are not
// looked at (said under the listing), so a huge folder does not stall the window.
constexpr size_t kMaxListedEntries = 400;

void red(const std::string& text) {
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.45f, 0.4f, 1.0f));
  ImGui::TextWrapped("%s", text.c_str());
  ImGui::PopStyleColor();
}

// The listing's tag for what an entry opens as (the sidebar is narrow; the whole in a tooltip).
const char* kindTag(const std::string& kind) {
  if (kind == "torch.profiler trace") return "[profiler]";
  if (kind == "torch.profiler traces") return "[profiler job]";
  if (kind == "a job's --trace-dir") return "[job]";
  if (kind == "trace") return "[trace]";
  if (kind == "summary") return "[summary]";
  return "";
}

void setPath(OpenChoice& choice, const std::string& path) {
  std::snprintf(choice.path, sizeof choice.path, "%s", path.c_str());
}

// Lists `folder` (once per folder, not every frame); the ticks belonged to the folder left.
void listFolder(OpenChoice& choice, const std::string& folder) {
  choice.listedFolder = folder;
  choice.entries = listRecordFolder(folder, choice.unlisted, choice.unexamined);
  choice.ticked.clear();
}

// The folder's entries, one line each: a click picks one (the path field shows it); a double click
// goes into a plain folder (and "../" up) and opens a recording; a tick adds a torch.profiler
// trace to those opened together. Returns the recording double-clicked, or "".
std::string drawListing(OpenChoice& choice) {
  std::string openNow, enter;
  ImGui::BeginChild("open:listing", ImVec2(0, ImGui::GetTextLineHeightWithSpacing() * 9), true);
  for (const auto& entry : choice.entries) {
    ImGui::PushID(entry.path.c_str());
    if (entry.kind == "torch.profiler trace") {
      bool ticked = choice.ticked.count(entry.path) > 0;
      if (ImGui::Checkbox("##tick", &ticked)) {
        if (ticked)
          choice.ticked.insert(entry.path);
        else
          choice.ticked.erase(entry.path);
      }
      noteItem(("open:tick:" + entry.name).c_str());
      ImGui::SameLine();
    }
    if (!entry.kind.empty()) {
      ImGui::TextDisabled("%s", kindTag(entry.kind));
      ImGui::SameLine();
    }
    const std::string label = entry.name + (entry.directory && entry.name != "../" ? "/" : "");
    if (ImGui::Selectable(label.c_str(), entry.path == choice.path, ImGuiSelectableFlags_AllowDoubleClick)) {
      setPath(choice, entry.path);
      choice.picked = entry.path;
      if (ImGui::IsMouseDoubleClicked(0)) (entry.kind.empty() ? enter : openNow) = entry.path;
    }
    noteItem(("open:entry:" + entry.name).c_str());
    if (!entry.kind.empty() && ImGui::IsItemHovered())
      ImGui::SetTooltip("%s: %s", entry.kind.c_str(), entry.path.c_str());
    ImGui::PopID();
  }
  if (choice.unlisted > 0) ImGui::TextDisabled("(%zu other files)", choice.unlisted);
  if (choice.unexamined > 0) ImGui::TextDisabled("(%zu more entries not examined: type a path)", choice.unexamined);
  ImGui::EndChild();
  if (!enter.empty()) listFolder(choice, enter);  // after the loop: it replaces the entries
  return openNow;
}

void drawStatus(const OpenChoice& choice, const OpenStatus& status) {
  if (!choice.message.empty()) red(choice.message);
  if (status.reading) {
    wrappedHint("%s", ("Reading " + status.what + " ... " + status.progress).c_str());
  } else if (status.finished > 0 && !status.error.empty()) {
    red("Could not open: " + status.error);
  } else if (status.finished > 0) {
    wrappedHint("%s", ("Opened " + status.what).c_str());
    if (!status.notes.empty()) wrappedHint("%s", status.notes.c_str());
  }
}

}  // namespace

std::string folderToList(const std::string& path) {
  std::error_code error;
  const fs::path p = path.empty() ? fs::path(".") : fs::path(path);
  if (fs::is_directory(p, error)) return p.lexically_normal().string();
  const fs::path parent = p.parent_path();
  return parent.empty() ? std::string(".") : parent.lexically_normal().string();
}

std::vector<RecordEntry> listRecordFolder(const std::string& folder, size_t& unlisted, size_t& unexamined) {
  std::vector<RecordEntry> dirs, records;
  unlisted = unexamined = 0;
  std::error_code error;
  size_t seen = 0;
  for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
    if (++seen > kMaxListedEntries) {
      ++unexamined;
      continue;
    }
    RecordEntry entry;
    entry.path = it->path().string();
    entry.name = it->path().filename().string();
    std::error_code kindError;
    entry.directory = it->is_directory(kindError);
    entry.kind = recordings::describePath(entry.path);
    if (entry.directory)
      dirs.push_back(std::move(entry));
    else if (!entry.kind.empty())
      records.push_back(std::move(entry));
    else
      ++unlisted;
  }
  auto byName = [](const RecordEntry& a, const RecordEntry& b) { return a.name < b.name; };
  std::sort(dirs.begin(), dirs.end(), byName);
  std::sort(records.begin(), records.end(), byName);
  std::vector<RecordEntry> out;
  const fs::path absolute = fs::absolute(folder, error);
  if (!error && absolute.has_parent_path() && absolute.parent_path() != absolute) {
    out.push_back({(absolute / "..").lexically_normal().string(), "../", true, ""});
  }
  out.insert(out.end(), dirs.begin(), dirs.end());
  out.insert(out.end(), records.begin(), records.end());
  return out;
}

OpenAction drawOpenPanel(OpenChoice& choice, bool busy, const OpenStatus& status, std::vector<std::string>& paths) {
  if (choice.expand) ImGui::SetNextItemOpen(true);
  const bool open = ImGui::CollapsingHeader("Open a recording (Ctrl+O)");
  noteItem("open:header");
  choice.expand = false;
  if (!open) return OpenAction::None;
  wrappedHint(
      "A run's --trace or --summary, a job's --trace-dir, or a PyTorch job's torch.profiler traces or CUDA memory "
      "snapshots (a folder, or its per-rank files ticked). Double-click: into a folder, or open a recording.");
  if (choice.focusPath) ImGui::SetKeyboardFocusHere();
  choice.focusPath = false;
  const bool entered = ImGui::InputText("path", choice.path, sizeof choice.path, ImGuiInputTextFlags_EnterReturnsTrue);
  const bool edited = ImGui::IsItemEdited();
  noteItem("open:path");
  // The listing follows the path field, except where a click in the listing put it there: a
  // click only picks (so a double click lands on the entry it began on).
  // Looked up once per path, not every frame (it asks the file system).
  if (edited || choice.listedFolder.empty() || (choice.path != choice.picked && choice.path != choice.followed)) {
    choice.followed = choice.path;
    const std::string folder = folderToList(choice.path);
    if (folder != choice.listedFolder) listFolder(choice, folder);
  }
  const std::string doubleClicked = drawListing(choice);
  ImGui::BeginDisabled(busy);
  const std::string button =
      choice.ticked.empty() ? "Open" : "Open " + std::to_string(choice.ticked.size()) + " ticked";
  const bool pressed = ImGui::Button(button.c_str());
  ImGui::EndDisabled();
  noteItem("open");
  ImGui::SameLine();
  ImGui::Checkbox("beside what is shown", &choice.beside);
  noteItem("open:beside");
  drawStatus(choice, status);
  if (busy || !(pressed || entered || !doubleClicked.empty())) return OpenAction::None;
  paths.clear();
  if (!doubleClicked.empty())
    paths.push_back(doubleClicked);
  else if (pressed && !choice.ticked.empty())
    paths.assign(choice.ticked.begin(), choice.ticked.end());
  else
    paths.push_back(choice.path);
  return OpenAction::Open;
}

}  // namespace shardscope::ui
