#!/usr/bin/env python3
"""No include loops inside a folder (its sub-folders included): a file pair (x.h, x.cpp) is one part, and part X depends on
part Y when x.h or x.cpp includes "FOLDER/y.h". A loop (X -> Y -> ... -> X) means neither part can
be read, built or tested without the other; the fix is to move what both need into a header of its
own below them (as ui/app_state.h, ui/timeline_style.h and engine/launch/run_types.h are). Exit 1, naming
each loop, when there is one."""
import glob
import os
import re
import sys

FOLDERS = ["files", "config", "trace", "import", "stats", "estimate", "lessons", "recordings", "engine", "ui", "app"]


def parts_of(root, folder):
    """The parts of a folder and its sub-folders (engine/launch/run_controller is part
    "launch/run_controller" of engine/), each with the parts of the same folder it includes."""
    parts = {}
    base = os.path.join(root, folder)
    for path in glob.glob(os.path.join(base, "**", "*.h"), recursive=True) + \
            glob.glob(os.path.join(base, "**", "*.cpp"), recursive=True):
        name = os.path.splitext(os.path.relpath(path, base))[0]
        included = set(re.findall(r'#include "' + folder + r'/([A-Za-z0-9_/]+)\.h"', open(path).read()))
        parts.setdefault(name, set()).update(included - {name})
    return parts


def loops_in(parts):
    found, state = [], {}

    def visit(part, path):
        state[part] = "open"
        path.append(part)
        for dep in sorted(parts.get(part, ())):
            if dep not in parts:
                continue
            if state.get(dep) == "open":
                found.append(path[path.index(dep):] + [dep])
            elif dep not in state:
                visit(dep, path)
        path.pop()
        state[part] = "done"

    for part in sorted(parts):
        if part not in state:
            visit(part, [])
    return found


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    loops = [(folder, loop) for folder in FOLDERS for loop in loops_in(parts_of(root, folder))]
    for folder, loop in loops:
        print(f"include_cycles: {folder}/: " + " -> ".join(loop))
    if loops:
        print("include_cycles: move what the parts of each loop share into a header of its own below them")
        return 1
    print("include_cycles: no include loop inside any folder")
    return 0


if __name__ == "__main__":
    sys.exit(main())
