#!/usr/bin/env bash
# Checks that the C++ lines changed since BASE are laid out as .clang-format says, with clang-format
# 14's clang-format-diff; prints the fix and exits 1 if not. BASE defaults to the commit that added
# .clang-format: every line changed since the layout rule began is held to it, older ones are not.
#   scripts/format_check.sh [BASE]        e.g. scripts/format_check.sh origin/main
# To apply the layout to your own changes: git diff -U0 BASE -- '*.cpp' '*.h' | clang-format-diff-14 -p1 -i
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
base=${1:-$(git log --format=%H -n 1 --diff-filter=A -- .clang-format)}
formatter=$(command -v clang-format-diff-14 || command -v clang-format-diff || true)
if [ -z "$formatter" ]; then
  echo "format_check: clang-format-diff not found (apt-get install clang-format-14); not checked" >&2
  exit 0
fi
if ! git rev-parse --verify -q "$base" >/dev/null; then
  echo "format_check: no commit '$base' to compare with (a clone of one commit); not checked" >&2
  exit 0
fi
diff=$(git diff -U0 --no-color "$base" -- '*.cpp' '*.h' | "$formatter" -p1 || true)
if [ -n "$diff" ]; then
  printf '%s\n' "$diff"
  echo "format_check: the lines above, changed since $base, are not laid out as .clang-format says; apply with:" >&2
  echo "  git diff -U0 $base -- '*.cpp' '*.h' | $(basename "$formatter") -p1 -i" >&2
  exit 1
fi
echo "format_check: the C++ lines changed since $base follow .clang-format"
