"""Shell working directory and path identity: ``cd`` prefixes, resolving, and when two spellings may be one file."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core.shell_paths import change_dir, named_in, parse_cd, resolve, same_file, shell_cwd


class TestParsing:
    @pytest.mark.parametrize(
        "command,expected",
        [
            ("cd /repo", (("/repo",), "")),
            ("cd /repo && cat a.py", (("/repo",), "cat a.py")),
            ("cd /repo; make", (("/repo",), "make")),
            ("cd /repo\ncat a.py", (("/repo",), "cat a.py")),
            ("cd /repo && cd src && ls", (("/repo", "src"), "ls")),
            ("  cd '/my dir' && ls", (("/my dir",), "ls")),
            ('cd "sub dir"', (("sub dir",), "")),
            ("cd", ((None,), "")),
            ("cd ~/x && ls", ((None,), "ls")),
            ("cd - && ls", ((None,), "ls")),
            ("cd $HOME && ls", ((None,), "ls")),
            ("cd src* && ls", ((None,), "ls")),
            ("cd /repo || exit 1", None),
            ("cd /a /b", None),
            ("cdx /repo", None),
            ("make && cd /repo", None),
        ],
    )
    def test_parse_cd(self, command: str, expected: object) -> None:
        assert parse_cd(command) == expected

    @settings(max_examples=200, deadline=None)
    @given(command=st.text(alphabet=st.sampled_from(list("cd /.~-$'\"\\;&|()\n\tab*")), max_size=40), cwd=st.sampled_from([None, "/r"]))
    def test_any_command_parses_without_error(self, command: str, cwd: str | None) -> None:
        run_in, after, body = shell_cwd(command, cwd)
        assert command.endswith(body) and after in (None, run_in)
        assert all(d is None or d.startswith("/") for d in (run_in, after))

    @pytest.mark.timeout(5)
    def test_a_long_odd_cd_is_parsed_in_linear_time(self) -> None:
        # A nested repeat in the directory pattern would backtrack exponentially here.
        assert parse_cd("cd " + "a" * 5000 + " x") is None and parse_cd("cd " + "a" * 5000 + "$") == ((None,), "")

    @pytest.mark.parametrize(
        "command,cwd,expected",
        [
            ("cat a.py", "/r", ("/r", "/r", "cat a.py")),
            ("cd src && cat a.py", "/r", ("/r/src", "/r/src", "cat a.py")),
            ("cd .. ; ls", "/r/src", ("/r", "/r", "ls")),
            ("cd src", None, (None, None, "")),  # relative to an unknown directory stays unknown
            ("cd /abs && cd sub", None, ("/abs/sub", "/abs/sub", "")),
            ("cd ~", "/r", (None, None, "")),
            ("make && cd build", "/r", (None, None, "make && cd build")),  # a change we cannot follow
            ("(cd sub; rm a.py)", "/r", (None, None, "(cd sub; rm a.py)")),  # subshell: unsure, so unknown
            ("git commit -m 'x'", "/r", ("/r", "/r", "git commit -m 'x'")),
        ],
    )
    def test_shell_cwd(self, command: str, cwd: str | None, expected: tuple) -> None:
        assert shell_cwd(command, cwd) == expected

    @pytest.mark.parametrize(
        "path,cwd,expected",
        [
            ("a.py", "/r", "/r/a.py"), ("./src/../a.py", "/r", "/r/a.py"), ("../x.py", "/r/src", "/r/x.py"),
            ("/abs/./a.py", "/r", "/abs/a.py"), ("a.py", None, "a.py"), ("./a.py", None, "a.py"),
            ("~/a.py", "/r", "~/a.py"), ("C:\\src\\a.py", "/r", "C:\\src\\a.py"), ("src\\a.py", "/r", "src\\a.py"),
        ],
    )
    def test_resolve(self, path: str, cwd: str | None, expected: str) -> None:
        assert resolve(path, cwd) == expected

    def test_change_dir(self) -> None:
        assert change_dir("/r", "src") == "/r/src" and change_dir("/r/src", "..") == "/r" and change_dir(None, "/x/") == "/x"
        assert change_dir(None, "src") is None and change_dir("/r", None) is None

    @pytest.mark.parametrize(
        "a,b,same",
        [
            ("/r/a.py", "/r/a.py", True), ("/r/a.py", "/s/a.py", False), ("/r/src/a.py", "src/a.py", True), ("a.py", "/r/src/a.py", True),
            ("src/a.py", "a.py", True), ("../lib/a.py", "/r/lib/a.py", True), ("/r/src/a.py", "lib/a.py", False), ("/r/data.py", "a.py", False),
            ("..", "/r/a.py", True), ("C:\\r\\a.py", "a.py", False), ("C:\\r\\a.py", "C:\\r\\a.py", True),
        ],
    )
    def test_same_file(self, a: str, b: str, same: bool) -> None:
        assert same_file(a, b) is same and same_file(b, a) is same

    @pytest.mark.parametrize(
        "path,command,cwd,named",
        [
            ("/r/src/a.py", "sed -i x /r/src/a.py", None, True),
            ("/r/src/a.py", "sed -i x src/a.py", "/r", True),
            ("/r/src/a.py", "sed -i x ./src/a.py", "/r", True),
            ("/r/lib/b.py", "sed -i x ../lib/b.py", "/r/src", True),
            ("/r/src/a.py", "sed -i x other/a.py", "/r", False),  # the directory is known: another file
            ("/r/src/a.py", "sed -i x other/a.py", None, True),  # unknown: it may be this one
            ("/r/src/a.py", "rm 'a.py'", None, True),
            ("/r/src/a.py", "python test_a.py", None, False),  # the name must be a whole path component
            ("/r/src/a.py", "cp a.pyc b", None, False),
            ("src/a.py", "sed -i x a.py", "/r/src", True),  # a key of unknown directory: unsure
        ],
    )
    def test_named_in(self, path: str, command: str, cwd: str | None, named: bool) -> None:
        assert named_in(path, command, cwd) is named
