#include "ui/listen_panel.h"

#include <filesystem>

#include <imgui.h>

#include "ui/item_probe.h"
#include "ui/theme.h"

namespace shardscope::ui {

std::string listenWorkerCommand(const ListenChoice& choice) {
  // Absolute: the ranks start from the user's shell, not from the app's working directory.
  std::error_code error;
  const std::string dir = std::filesystem::absolute(choice.dir, error).string();
  return "torchrun --nproc-per-node 4 --no-python shardscope worker --model gpt --collector 127.0.0.1:" +
         std::to_string(choice.port) + " --trace-dir '" + (error ? std::string(choice.dir) : dir) + "'";
}

ListenAction drawListenPanel(ListenChoice& choice, bool busy) {
  if (choice.expand) ImGui::SetNextItemOpen(true);
  choice.expand = false;
  const bool open = ImGui::CollapsingHeader("Listen for a launched job");
  noteItem("listen:header");
  if (!open) return ListenAction::None;
  wrappedHint(
      "Draw a job that torchrun or srun started, live, as its ranks stream to a collector "
      "here (127.0.0.1; other hosts: shardscope listen --bind ADDR --token-file F --window).");
  ImGui::InputInt("port", &choice.port);
  noteItem("listen:port");
  ImGui::InputText("directory", choice.dir, sizeof choice.dir);
  noteItem("listen:dir");
  ImGui::BeginDisabled(busy);
  const bool pressed = ImGui::Button("Listen");
  ImGui::EndDisabled();
  noteItem("listen");
  wrappedHint("Then run each host's ranks with: %s", listenWorkerCommand(choice).c_str());
  if (!choice.message.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.45f, 0.4f, 1.0f));
    ImGui::TextWrapped("%s", choice.message.c_str());
    ImGui::PopStyleColor();
  }
  return pressed ? ListenAction::Listen : ListenAction::None;
}

}  // namespace shardscope::ui
