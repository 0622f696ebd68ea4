"""Simulated tools: inputs and outputs shaped like a Claude-Code-style agent's.

``Workspace`` remembers the files the agent has read (path -> current lines)
so that a re-read returns the very same text (the read-dedup case) and an
Edit changes what the next read returns. Memory is bounded: only the most
recent ``KEEP_FILES`` files stay re-readable, so a 100 MB session streams.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any

from .shell import error_output, shell_output
from .vocab import DIRS, EXTENSIONS, MONTHS, NOUNS, TextKit

__all__ = ["Workspace", "ToolCall", "KEEP_FILES", "PROJECTS"]

KEEP_FILES = 256
PROJECTS = ("billing-api", "orbit-cli", "ledger-svc", "paperboat", "tidewater", "quillstack", "harbor-sync", "lumen-web")

# (tool name, tool input, output text, is_error)
ToolCall = tuple[str, dict[str, Any], str, bool]


def numbered(lines: list[str], start: int = 1) -> str:
    # Claude Code's Read output: right-aligned line number, an arrow, the line.
    return "\n".join(f"{i:>6}\u2192{line}" for i, line in enumerate(lines, start))


class Workspace:
    def __init__(self, kit: TextKit, *, typical: int, maximum: int, huge_rate: float) -> None:
        self.kit = kit
        self.rng = kit.rng
        self.project = self.rng.choice(PROJECTS)
        self.root = f"/home/dev/{self.project}"
        self.typical, self.maximum, self.huge_rate = typical, maximum, huge_rate
        self.files: OrderedDict[str, list[str]] = OrderedDict()
        self._used: set[str] = set()

    # -- sizes and paths ---------------------------------------------------------
    def size(self) -> int:
        r = self.rng
        if self.huge_rate and r.random() < self.huge_rate:
            return int(r.uniform(0.3, 1.0) * self.maximum)
        return max(40, min(self.maximum, int(r.lognormvariate(math.log(self.typical), 0.9))))

    def new_path(self, ext: str | None = None) -> str:
        p = self.rng.choice
        for attempt in range(1000):
            e = ext or p(EXTENSIONS)
            folder = "docs" if e == ".md" else ("config" if e == ".yaml" else p(DIRS))
            name = f"{p(NOUNS)}_{p(NOUNS)}" if attempt < 50 else f"{p(NOUNS)}_{p(NOUNS)}_{attempt}"
            path = f"{self.root}/{folder}/{p(NOUNS)}/{name}{e}" if self.rng.random() < 0.4 else f"{self.root}/{folder}/{name}{e}"
            if path not in self._used:
                self._used.add(path)
                return path
        raise RuntimeError("path space exhausted")  # pragma: no cover - 10^6 names per folder

    def cap(self, text: str) -> str:
        """Cut ``text`` at a line end so it never exceeds the configured maximum."""
        if len(text) <= self.maximum:
            return text
        cut = text.rfind("\n", 0, self.maximum)
        return text[: cut if cut > 0 else self.maximum]

    def _fit(self, lines: list[str]) -> list[str]:
        # Leave room for a planted fact's line.
        limit, size = max(self.maximum - 256, self.maximum // 2), 0
        for i, line in enumerate(lines):
            size += len(line) + 8
            if size > limit:
                return lines[:i]
        return lines

    def release(self, *paths: str) -> None:
        """Paths only shown in a listing or a grep hit stay free for a later read."""
        self._used.difference_update(paths)

    def remember(self, path: str, lines: list[str]) -> None:
        self.files[path] = lines
        self.files.move_to_end(path)
        while len(self.files) > KEEP_FILES:
            self.files.popitem(last=False)

    def known(self) -> list[str]:
        return list(self.files)

    # -- tools ---------------------------------------------------------------------
    def read(self, path: str | None, fact: str | None = None) -> ToolCall:
        """Read ``path`` again if given (same text unless edited), else a file never read before."""
        if path is None or path not in self.files:
            ext = ".md" if fact and self.rng.random() < 0.5 else None
            path = self.new_path(ext)
            # Line numbers add ~7 chars a line; aim the raw text below the drawn size.
            lines = self._fit(self.kit.code_lines(path[path.rfind("."):], self.size() * 4 // 5))
            if fact:
                at = self.rng.randrange(1, max(2, len(lines)))
                prefix = {".py": "# NOTE: ", ".yaml": "# NOTE: ", ".md": "> **Note:** "}.get(path[path.rfind("."):], "// NOTE: ")
                lines.insert(at, prefix + fact)
            self.remember(path, lines)
        else:
            self.files.move_to_end(path)
        return "Read", {"file_path": path}, numbered(self.files[path]), False

    def edit(self, path: str) -> ToolCall:
        lines = self.files.get(path) or self.kit.code_lines(path[path.rfind("."):], 800)
        candidates = [i for i, x in enumerate(lines) if x.strip()] or [0]
        i = self.rng.choice(candidates)
        old = lines[i] if lines else ""
        indent = old[: len(old) - len(old.lstrip())]
        new = f"{indent}# {self.kit.comment()}" if path.endswith((".py", ".yaml")) else f"{indent}// {self.kit.comment()}"
        changed = lines[:i] + [new, old] + lines[i + 1 :]
        self.remember(path, changed)
        lo = max(0, i - 4)
        out = f"The file {path} has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n" + numbered(changed[lo : i + 6], lo + 1)
        return "Edit", {"file_path": path, "old_string": old.strip(), "new_string": new.strip() + "\n" + old.strip()}, out, False

    def write(self) -> ToolCall:
        path = self.new_path(".py")
        lines = self.kit.code_lines(".py", self.rng.randrange(300, 1500))
        self.remember(path, lines)
        return "Write", {"file_path": path, "content": "\n".join(lines)}, f"File created successfully at: {path}", False

    def grep(self) -> ToolCall:
        kit, r = self.kit, self.rng
        pattern = kit.ident()
        target = self.size()
        if r.random() < 0.25:
            paths = [self.new_path() for _ in range(max(1, min(400, target // 60)))]
            self.release(*paths)
            out = f"Found {len(paths)} files\n" + "\n".join(paths)
            return "Grep", {"pattern": pattern, "path": self.root, "output_mode": "files_with_matches"}, self.cap(out), False
        lines, size = [], 0
        path = self.new_path(".py")
        while size < target:
            if r.random() < 0.3:
                self.release(path)
                path = self.new_path(".py")
            line = f"{path}:{r.randrange(1, 900)}:{kit.grep_line(pattern)}"
            lines.append(line)
            size += len(line) + 1
        self.release(path)
        return "Grep", {"pattern": pattern, "path": self.root, "output_mode": "content", "-n": True}, self.cap("\n".join(lines)), False

    def listing(self) -> ToolCall:
        r = self.rng
        count = max(1, min(3000, self.size() // 50))
        paths = sorted({self.new_path(".py" if r.random() < 0.7 else None) for _ in range(count)})
        self.release(*paths)
        if r.random() < 0.7:
            return "Glob", {"pattern": "**/*.py", "path": self.root}, self.cap("\n".join(paths)), False
        out = [f"- {self.root}/"] + [f"  - {p[len(self.root) + 1:]}" for p in paths]
        return "LS", {"path": self.root}, self.cap("\n".join(out)), False

    def bash(self) -> ToolCall:
        command, output = shell_output(self, self.size())
        word = command.split()[0]
        description = {"python": "Run the tests", "git": "Inspect the git state", "tail": "Show recent log lines", "pip": "Install dependencies", "ruff": "Lint the code"}.get(word, "List files")
        return "Bash", {"command": command, "description": description}, self.cap(output), False

    def error(self, name: str, tool_input: dict[str, Any]) -> ToolCall:
        return name, tool_input, error_output(self, name, tool_input), True

    def ls_line(self, name: str) -> str:
        r = self.rng
        return f"-rw-r--r--  1 dev  staff  {r.randrange(80, 90000):>6} {r.choice(MONTHS)} {r.randrange(1, 29):>2} {r.randrange(24):02d}:{r.randrange(60):02d} {name}"
