// Parses the command line and turns CLI11's failures into shardscope's own one-line errors: what was
// wrong, what is allowed, what to type instead, and exit status 2 like every other usage error.
// (CLI11 alone says "The following argument was not expected: --worlds" and exits with 109.)
#pragma once

#include <optional>

#include <CLI/CLI.hpp>

namespace shardscope::app {

// Parses argv into `app`. Returns the status to exit with when the program should stop here (0
// after printing --help, 2 after a usage error on stderr), or nothing when parsing succeeded.
std::optional<int> parseCommandLine(CLI::App& app, int argc, char** argv);

}  // namespace shardscope::app
