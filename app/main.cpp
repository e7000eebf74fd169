// shardscope: the one executable. Its commands and options are in command_line.h, what each does
// in commands.cpp; here the parse, the dispatch, and the check that what was printed reached
// standard output.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "app/command_line.h"
#include "app/command_line_parse.h"
#include "app/run_commands.h"

namespace {

int dispatch(int argc, char** argv) {
  shardscope::app::CommandLine commandLine;
  if (auto stop = shardscope::app::parseCommandLine(commandLine.app, argc, argv)) return *stop;
  if (auto error = commandLine.windowProblem()) return shardscope::app::failUsage(*error);
  return commandLine.runCommand();
}

// What was printed must have reached standard output: a full disk or /dev/full behind it made
// every printf fail quietly, and the command still exited 0. Exit 1 then, saying so on stderr.
int checkStandardOutput(int status) {
  errno = 0;
  std::cout.flush();
  const bool failed = std::fflush(stdout) != 0 || std::ferror(stdout) != 0 || !std::cout;
  if (!failed) return status;
  // An earlier flush that failed left the stream's error flag but not its reason.
  const std::string reason = errno != 0 ? std::string(" (") + std::strerror(errno) + ")" : "";
  std::fprintf(stderr,
               "shardscope: error: could not write to standard output%s: what was printed is incomplete. "
               "Free space where it goes, or send it elsewhere.\n",
               reason.c_str());
  return status == 0 ? 1 : status;
}

}  // namespace

// Anything unexpected still ends with one readable line, never an abort.
int main(int argc, char** argv) {
  try {
    return checkStandardOutput(dispatch(argc, argv));
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "shardscope: error: %s\n", ex.what());
    return checkStandardOutput(1);
  }
}
