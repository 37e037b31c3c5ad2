#!/usr/bin/env python3
"""Checks the shape of src/ that DESIGN keeps by convention, so that a change cannot quietly undo it.

1. Layers: src/api -> src/ops -> src/jit -> src/runtime. A file may include headers of its own layer
   and of the layers below it, never of a layer above.
2. Function length: no function body in src/ is longer than MAX_FUNCTION_LINES lines.

  python3 tests/structure/check_structure.py [SRC_DIR]    exits 1 naming every violation
"""

from __future__ import annotations

import os
import re
import sys
from typing import Iterator, List, Tuple

LAYERS = ["runtime", "jit", "ops", "api"]  # lowest first
MAX_FUNCTION_LINES = 120

INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[^"]+"')


def sources(src: str) -> Iterator[Tuple[str, str]]:
    for layer in LAYERS:
        folder = os.path.join(src, layer)
        for name in sorted(os.listdir(folder)):
            if name.endswith((".h", ".cpp")):
                yield layer, os.path.join(folder, name)


def layer_violations(layer: str, path: str, lines: List[str]) -> List[str]:
    rank = LAYERS.index(layer)
    found = []
    for number, line in enumerate(lines, 1):
        match = INCLUDE.match(line)
        if match and match.group(1) in LAYERS and LAYERS.index(match.group(1)) > rank:
            found.append(f"{path}:{number}: {layer}/ includes {match.group(1)}/ (a higher layer): {line.strip()}")
    return found


def strip_code(text: str) -> str:
    """The text with comments, string and character literals blanked (newlines kept)."""
    pattern = re.compile(r'//[^\n]*|/\*.*?\*/|R"([^(]*)\(.*?\)\1"|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
    return pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


# A brace that opens a function body: ')' then optional qualifiers, trailing return type or a
# constructor's initializer list before '{'.
FUNCTION_HEAD = re.compile(r"\)\s*(const|noexcept|override|final|mutable|->[^{;]*|:[^{;]*|\s)*$")
CONTROL = re.compile(r"\b(if|for|while|switch|catch|return|sizeof|decltype)\s*\($")


def long_functions(path: str, text: str) -> List[str]:
    code = strip_code(text)
    found = []
    depth, opened = 0, []  # stack of (is_function, start line) per open brace
    line = 1
    for i, ch in enumerate(code):
        if ch == "\n":
            line += 1
        elif ch == "{":
            head = code[max(0, i - 400):i]
            is_function = bool(FUNCTION_HEAD.search(head)) and not any(f for f, _ in opened)
            if is_function:
                # The call's opening parenthesis must not belong to a control statement or lambda.
                close = head.rstrip().rfind(")")
                level, j = 0, close
                while j >= 0:
                    level += {")": 1, "(": -1}.get(head[j], 0)
                    if level == 0:
                        break
                    j -= 1
                before = head[:j + 1] if j >= 0 else ""
                if CONTROL.search(before) or before.rstrip().endswith("]"):
                    is_function = False
            opened.append((is_function, line))
        elif ch == "}" and opened:
            is_function, start = opened.pop()
            if is_function and line - start - 1 > MAX_FUNCTION_LINES:
                found.append(f"{path}:{start}: function body of {line - start - 1} lines "
                             f"(at most {MAX_FUNCTION_LINES})")
    return found


def main() -> int:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "src")
    problems = []
    for layer, path in sources(src):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        problems += layer_violations(layer, os.path.relpath(path, root), text.splitlines())
        problems += long_functions(os.path.relpath(path, root), text)
    for p in problems:
        print(p)
    if problems:
        print(f"check_structure: {len(problems)} violation(s)", file=sys.stderr)
        return 1
    print("check_structure: layers point down; no function over", MAX_FUNCTION_LINES, "lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
