"""Retention's file paths of a shell command: paths as written, never a URL's pieces, refs, subcommands or code."""

from __future__ import annotations

import pytest

from lab.core.messages import ToolUseBlock
from lab.replayer.retention import targets
from tests.builders import assistant, call_and_result, system, user


def _paths(command: str) -> list[str]:
    raw = [system(), user("Go."), *call_and_result("Bash", "ok", command=command), assistant("done")]
    return [i.text for i in targets(raw).file_paths]


class TestUrlsAreNotPaths:
    @pytest.mark.parametrize("command", [
        "curl -s http://localhost:8080/api/trajectories | head",
        "curl 'https://api.github.com/repos/acme/widget/pulls?state=open'",
        "open file:///Users/me/report.html",
    ])
    def test_nothing_inside_a_url_is_a_file_path(self, command: str) -> None:
        assert _paths(command) == []

    def test_a_path_beside_a_url_is_kept(self) -> None:
        assert _paths("wget https://example.com/pkg/file.tar.gz -O /tmp/file.tar.gz") == ["/tmp/file.tar.gz"]


class TestPathsAsWritten:
    @pytest.mark.parametrize(("command", "paths"), [
        ("ls /Users/me/proj/app.py", ["/Users/me/proj/app.py"]),
        ("mkdir -p /workspace/analysis && cat /workspace/analysis/a.md", ["/workspace/analysis", "/workspace/analysis/a.md"]),
        ("cat ~/notes/todo.md", ["~/notes/todo.md"]),
        ("python3 reproduce.py --out=/tmp/o.txt", ["reproduce.py", "/tmp/o.txt"]),
        ("pytest tests/test_x.py::test_y -q", ["tests/test_x.py"]),
        ("grep -rn total tests/", ["tests"]),
        ("cat Makefile", ["Makefile"]),
    ])
    def test_absolute_paths_keep_their_leading_slash(self, command: str, paths: list[str]) -> None:
        assert _paths(command) == paths


class TestNotFiles:
    @pytest.mark.parametrize("command", [
        "ruff check .",  # a subcommand: the "used path check"
        "make check",
        "git checkout -b feature/issue-271-dev",
        "git push -u origin feature/issue-271-dev",
        "gh pr create -R acme/widget -t Fix",
        "python -c 'import sys; print(sys.path)'",
        "sed -n '/if not self.config/p' README",
    ])
    def test_refs_subcommands_and_code_are_not_paths(self, command: str) -> None:
        found = _paths(command)
        assert not [p for p in found if p not in ("README",)], found

    def test_sed_script_is_code_its_file_is_a_path(self) -> None:
        assert _paths("sed -i 's/parent.config.getini/x/' src/a.py") == ["src/a.py"]

    def test_git_files_after_double_dash_are_paths(self) -> None:
        assert _paths("git diff -- src/a.py") == ["src/a.py"]

    def test_path_keys_of_tools_are_untouched(self) -> None:
        block = ToolUseBlock(id="t1", name="Read", input={"file_path": "/srv/app/main.py"})
        from lab.replayer.retention import _paths as paths_of

        assert paths_of(block) == ["/srv/app/main.py"]
