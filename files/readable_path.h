// Why a path a user names cannot be read, in words that name it and the fix, for every reader that
// opens what the user names (`view`, its --summary, the app's Open). The readers tell a record's
// kind by its first bytes, then read it whole: what cannot be opened, or read twice, is said here
// before any of them tries, and a damaged gzip file is said where it breaks.
#pragma once

#include <string>

namespace shardscope::files {

// "" when `path` is a regular file or a directory this process may open (or is not there at all:
// the callers say that in their own words); else a sentence saying why not. Something other than
// a file or a directory is refused after a stat(), never opened: a FIFO with no writer would block
// open() for ever, and a pipe (`view <(cat t.pftrace)`) gives its bytes once, where the readers
// read a file's head and then the whole.
std::string cannotOpenReason(const std::string& path);

// The sentence for an open() of `path` that failed with errno `err` (permission denied, ...).
// Apart from cannotOpenReason so that the wording is tested as root too, whom no permission stops.
std::string openFailureReason(const std::string& path, int err, bool directory);

// "" when `path` is not gzip-compressed, or inflates to its end with its checksums right; else
// "'PATH' is a damaged gzip file: ..." with the byte of the compressed file where it breaks (or
// where it ends, cut short) and the fix. It inflates the whole file: for an error path only.
std::string gzipDamage(const std::string& path);

}  // namespace shardscope::files
