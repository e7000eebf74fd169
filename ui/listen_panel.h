// The sidebar's "Listen for a launched job": the app's Listen mode started from the window. The
// collector listens on this machine's loopback (a job on other hosts needs a token: `shardscope
// listen --bind ADDR --token-file F --window` from the command line); the panel shows the command
// the job's ranks run to stream to it.
#pragma once

#include <string>

namespace shardscope::ui {

struct ListenChoice {
  int port = 29700;
  char dir[512] = "shardscope-job";  // where the collector writes the ranks' files
  std::string message;               // why the last Listen did not start, or ""
  bool expand = false;               // unfold the panel once (the first screen's "Listen for a job")
};

enum class ListenAction { None, Listen };

// `busy`: a run or a listen is under way (Stop ends it).
ListenAction drawListenPanel(ListenChoice& choice, bool busy);

// The command a rank of the job runs to stream to the panel's collector.
std::string listenWorkerCommand(const ListenChoice& choice);

}  // namespace shardscope::ui
