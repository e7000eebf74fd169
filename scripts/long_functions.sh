#!/usr/bin/env bash
# Lists the functions outside tests/ longer than LINES (default 100) lines, from the line of their
# name to their closing brace, as lizard (a well-kept code analyser, from PyPI) counts them; exits 1
# if there is one. Those over WARN lines (default 80) are listed as a warning: a function near the
# limit is usually two topics, best split where they part, not where the count says.
#   scripts/long_functions.sh [LINES [WARN]]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
limit=${1:-100}
warn=${2:-80}
env_file=$("$root/scripts/setup.sh")
# shellcheck disable=SC1090
source "$env_file"
python=${SHARDSCOPE_PYTHON:-python3}
if ! "$python" -c 'import lizard' 2>/dev/null &&
   ! "$python" -m pip install -q --disable-pip-version-check "lizard==1.24.3" >&2; then
  echo "long_functions: lizard could not be installed from PyPI; not checked" >&2
  exit 0
fi
cd "$root"
folders=(app config engine estimate files import lessons recordings stats trace ui bench)
longer_than() {
  "$python" -m lizard -l cpp -L "$1" -C 100000 -a 100 -T nloc=100000 -w "${folders[@]}" 2>/dev/null || true
}
near=$(longer_than "$warn")
if [ -n "$near" ]; then
  printf '%s\n' "$near" >&2
  echo "long_functions: warning: the functions above are longer than $warn lines (split them where their topics part)" >&2
fi
long=$(longer_than "$limit")
if [ -n "$long" ]; then
  printf '%s\n' "$long"
  echo "long_functions: the functions above are longer than $limit lines" >&2
  exit 1
fi
echo "long_functions: no function outside tests/ is longer than $limit lines"
