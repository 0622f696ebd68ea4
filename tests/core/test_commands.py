"""What a tool call reads, writes and runs, and how it ended: shell forms, edit tools, outcomes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core.commands import Outcome, ToolAction, patch_changes, replacement, result_outcome, shell_action, tool_action
from lab.core.messages import ToolUseBlock


def call(name: str, **inputs: object) -> ToolAction:
    return tool_action(ToolUseBlock(id="t1", name=name, input=inputs))


def written(action: ToolAction) -> dict[str, str]:
    return {w.path: w.what for w in action.writes}


# (script, kind, reads, {written path: a piece of what changed})
SHELL = [
    ("cat src/a.py", "read", ("src/a.py",), {}),
    ("sed -n '10,40p' src/a.py", "read", ("src/a.py",), {}),
    ("head -n 50 README.md && tail -20 CHANGES.txt", "read", ("README.md", "CHANGES.txt"), {}),
    ("nl -ba src/x.py | sed -n '10,20p'", "read", ("src/x.py",), {}),
    ("less 'my file.txt'", "read", ("my file.txt",), {}),
    ('grep -n "class Foo" django/db/models.py', "search", ("django/db/models.py",), {}),
    ('grep -rn "Foo" django/ --include="*.py"', "search", (), {}),
    ("find . -name '*.py' | head", "search", (), {}),
    ("ls -la", "search", (), {}),
    ("cd /testbed && cat setup.py", "read", ("/testbed/setup.py",), {}),
    ("cd /testbed && sed -n '1,5p' ../other/x.py", "read", ("/other/x.py",), {}),
    ("python -m pytest tests/ -x", "run", (), {}),
    ("python test.py 2>&1 | tail -20", "run", (), {}),
    ("echo done", "run", (), {}),
    ("sed -i 's/old_name/new_name/g' src/a.py", "write", (), {"src/a.py": 'replaced "old_name" with "new_name"'}),
    ("sed -i.bak -e '12s|a|b|' f.py", "write", (), {"f.py": "line 12"}),
    ("sed -i '/^#/d' conf.ini", "write", (), {"conf.ini": "sed -i '/^#/d'"}),
    ("cat > test_issue.py << 'EOF'\nimport os\nprint(1)\nEOF", "write", (), {"test_issue.py": "2 lines from a heredoc"}),
    ("cat <<-EOF >out.txt\n\tone\n\tEOF\ncat out.txt", "write", (), {"out.txt": "1 line from a heredoc"}),
    ("cat <<EOF > 'my file.txt'\nhello\nEOF\npython 'my file.txt'", "write", (), {"my file.txt": "heredoc"}),
    ("echo 'x = 1' >> src/a.py", "write", (), {"src/a.py": 'appended: "x = 1"'}),
    ("printf 'a\\n' > b.txt", "write", (), {"b.txt": "written"}),
    ("echo hi | tee -a log.txt", "write", (), {"log.txt": "appended"}),
    ("pytest -q > out.log 2>&1", "write", (), {"out.log": "output of pytest -q"}),
    ("mv a.py b.py", "write", (), {"a.py": "moved to b.py", "b.py": "moved from a.py"}),
    ("cp src/a.py /tmp/a.py", "write", ("src/a.py",), {"/tmp/a.py": "copied from src/a.py"}),
    ("rm -rf build dist", "write", (), {"build": "deleted", "dist": "deleted"}),
    ("git checkout -- a.py", "write", (), {"a.py": "restored from git"}),
    ("perl -pi -e 's/foo/bar/g' a.txt", "write", (), {"a.txt": "perl"}),
    ("cat <<'PATCH' | git apply\ndiff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\nPATCH", "write", (), {"x.py": 'updated (+1 -1): "b"'}),
    ("git apply <<EOF\n--- a/y.py\n+++ b/y.py\n@@\n+new\nEOF", "write", (), {"y.py": "+1 -0"}),
    ("patch -p1 < fix.diff", "write", ("fix.diff",), {}),
    ("apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: src/app.py\n@@\n-old\n+new line\n*** Add File: b.txt\n+hi\n*** Delete File: c.txt\n*** End Patch\nEOF", "write", (), {"src/app.py": 'updated (+1 -1): "new line"', "b.txt": "added (1 line)", "c.txt": "deleted"}),
    ("(cd x; ls)&&echo done > f", "write", (), {"f": 'written: "done"'}),
    ("timeout 60 sudo env A=1 cat /etc/hosts", "read", ("/etc/hosts",), {}),
    ("bash -lc 'cat a.py'", "read", ("a.py",), {}),
    ("cat $HOME/x.py *.txt", "read", (), {}),
    ("echo 'unclosed > f.txt", "run", (), {}),
    ('cat "C:\\Users\\me\\file.txt"', "read", ("C:\\Users\\me\\file.txt",), {}),
    ("type C:\\Users\\me\\file.txt", "run", (), {}),
]


@pytest.mark.parametrize("script, kind, reads, writes", SHELL, ids=[s[0].split("\n")[0][:40] for s in SHELL])
def test_shell_forms(script: str, kind: str, reads: tuple[str, ...], writes: dict[str, str]) -> None:
    action = shell_action(script)
    assert action.kind == kind
    assert action.reads == reads
    assert action.command == script
    got = written(action)
    assert set(got) == set(writes)
    for path, piece in writes.items():
        assert piece in got[path], (path, got[path])


def test_paths_are_reads_and_writes() -> None:
    action = shell_action("cp a.py b.py && sed -i 's/x/y/' b.py")
    assert action.paths == ("a.py", "b.py")
    assert [w.path for w in action.writes] == ["b.py", "b.py"]


def test_shell_call_through_a_tool() -> None:
    action = call("shell", command=["bash", "-lc", "sed -n 1,20p a.py"])
    assert (action.kind, action.reads, action.command) == ("read", ("a.py",), "sed -n 1,20p a.py")
    assert call("Bash", command="rm x", description="clean").writes[0].what == "deleted"


class TestEditTools:
    def test_edit_shows_only_what_differs(self) -> None:
        action = call("Edit", file_path="a.py", old_string="def f(x):\n    return x+1", new_string="def f(x):\n    return x + 2")
        assert action.kind == "write" and action.paths == ("a.py",)
        assert action.change == 'replaced "x+1" with "x + 2"'

    def test_multiedit(self) -> None:
        action = call("MultiEdit", file_path="a.py", edits=[{"old_string": "foo", "new_string": "bar"}, {"old_string": "x", "new_string": "y"}])
        assert action.change == '2 edits, first replaced "foo" with "bar"'

    @pytest.mark.parametrize(
        "inputs, kind, what",
        [
            ({"command": "view", "path": "/w/a.c"}, "read", None),
            ({"command": "create", "path": "/w/n.py", "file_text": "a\nb\n"}, "write", "created (2 lines)"),
            ({"command": "str_replace", "path": "/w/a.c", "old_str": "DONE", "new_str": ""}, "write", 'removed "DONE"'),
            ({"command": "insert", "path": "/w/a.c", "insert_line": 4, "new_str": "x = 1"}, "write", 'inserted after line 4: "x = 1"'),
            ({"command": "undo_edit", "path": "/w/a.c"}, "write", "last edit undone"),
        ],
        ids=["view", "create", "str_replace", "insert", "undo"],
    )
    def test_editor(self, inputs: dict[str, object], kind: str, what: str | None) -> None:
        for name in ("str_replace_based_edit_tool", "str_replace_editor"):
            action = call(name, **inputs)
            assert action.kind == kind and action.paths == (inputs["path"],)
            assert action.change == what

    def test_write_file_and_read_tools(self) -> None:
        assert call("write_file", file_path="n.md", content="x\ny").change == "written (2 lines)"
        assert call("Write", file_path="n.md", content="").kind == "write"
        assert call("Read", file_path="a.py").reads == ("a.py",)
        assert call("read_file", absolute_path="/a.py").reads == ("/a.py",)
        assert call("read_many_files", paths=["a", "b"]).reads == ("a", "b")

    def test_search_and_other_tools(self) -> None:
        assert call("Grep", pattern="x", path="src/").kind == "search"
        assert call("Glob", pattern="**/*.py").kind == "search"
        assert call("TodoWrite", todos=[]).kind == "run"

    def test_apply_patch_tool_with_move(self) -> None:
        envelope = "*** Begin Patch\n*** Update File: a.py\n*** Move to: b.py\n@@\n+x\n*** End Patch"
        action = call("apply_patch", input=envelope)
        assert written(action) == {"a.py": 'updated (+1 -0): "x", moved to b.py', "b.py": "moved from a.py"}
        assert written(call("shell", command=["apply_patch", envelope])) == written(action)


class TestPatchesAndReplacements:
    def test_unified_diff_counts(self) -> None:
        diff = "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n-a\n-b\n+c\n"
        assert patch_changes(diff)[0].what == 'updated (+1 -2): "c"'

    def test_new_and_deleted_files_in_a_diff(self) -> None:
        diff = "--- /dev/null\n+++ b/new.py\n@@\n+1\n+2\n--- a/old.py\n+++ /dev/null\n@@\n-x\n--- sql comment\n"
        assert [(c.path, c.what) for c in patch_changes(diff)] == [("new.py", "added (2 lines)"), ("old.py", "deleted")]

    def test_replacement_widens_to_words(self) -> None:
        assert replacement("return subclass in self._subclasses or x", "return any(issubclass(subclass, c) for c in self._subclasses) or x") == (
            'replaced "subclass in self._subclasses" with "any(issubclass(subclass, c) for c in self._subclasses)"'
        )
        assert replacement("total_count = 1", "total_counter = 1") == 'replaced "total_count" with "total_counter"'
        assert replacement("f(a)", "f(b)") == 'replaced "a" with "b"'
        assert replacement("", "new") == 'inserted "new"'


class TestOutcome:
    @pytest.mark.parametrize(
        "content, is_error, ok, code, error",
        [
            ("<returncode>0</returncode>\n<output>\nfine\n</output>", False, True, 0, None),
            ('<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n  File "x.py", line 1\n    import y\nModuleNotFoundError: No module named \'y\'\n</output>', False, False, 1, "ModuleNotFoundError: No module named 'y'"),
            ("Exit code: 2\nWall time: 1s\nOutput:\nerror: patch failed: a.py:3\n", False, False, 2, "error: patch failed: a.py:3"),
            ("[The command completed with exit code 127.]\nbash: ponyc: command not found", False, False, 127, "bash: ponyc: command not found"),
            ("E       AssertionError: assert 1 == 2\nFAILED tests/t.py::test_x - AssertionError", False, False, None, "FAILED tests/t.py::test_x - AssertionError"),
            ("<returncode>0</returncode>\n<output>\nTraceback (most recent call last):\n  File \"t.py\", line 3\nKeyError: 'k'\n</output>", False, False, 0, "KeyError: 'k'"),
            ("permission problem somewhere", True, False, None, "permission problem somewhere"),
        ],
        ids=["ok", "traceback", "codex-exit", "openhands-exit", "pytest", "traceback-exit-0", "is-error"],
    )
    def test_run_outcomes(self, content: str, is_error: bool, ok: bool, code: int | None, error: str | None) -> None:
        got = result_outcome(content, is_error, shell_action("python t.py"))
        assert got == Outcome(ok=ok, exit_code=code, error=error)

    def test_file_contents_are_not_errors(self) -> None:
        content = "<returncode>0</returncode>\n<output>\nraise ValueError\nerror: this is source code\n</output>"
        assert result_outcome(content, False, shell_action("cat a.py")).ok

    def test_grep_without_match_is_not_a_failure(self) -> None:
        empty = "<returncode>1</returncode>\n<output>\n</output>"
        assert result_outcome(empty, False, shell_action("grep -n Foo a.py")).ok
        assert not result_outcome(empty, False, shell_action("python t.py")).ok

    def test_label(self) -> None:
        assert Outcome(ok=True, exit_code=0).label == "ok"
        assert Outcome(ok=False, exit_code=1, error="boom").label == "exit 1: boom"
        assert Outcome(ok=False, error="boom").label == "error: boom"


class TestNeverRaises:
    @settings(max_examples=300, deadline=None)
    @given(st.text())
    def test_any_script(self, script: str) -> None:
        action = shell_action(script)
        assert action.kind in ("read", "write", "run", "search")
        assert set(action.reads) | {w.path for w in action.writes} == set(action.paths)

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.sampled_from(["cat", "sed", "-i", "-n", "'s/a/b/'", "<<EOF", "EOF", ">", ">>", "|", "&&", ";", "a.py", "\n", "'", '"', "$(", ")", "2>&1", "tee", "git", "apply", "mv", "C:\\x"]), max_size=14))
    def test_shell_like_scripts(self, words: list[str]) -> None:
        shell_action(" ".join(words))

    @settings(max_examples=200, deadline=None)
    @given(st.dictionaries(st.sampled_from(["command", "path", "file_path", "old_string", "new_string", "edits", "input", "content", "paths", "cmd"]), st.one_of(st.text(), st.integers(), st.none(), st.lists(st.text(), max_size=3), st.lists(st.dictionaries(st.text(max_size=3), st.text(max_size=5)), max_size=2))))
    def test_any_tool_input(self, inputs: dict[str, object]) -> None:
        for name in ("bash", "Edit", "str_replace_editor", "apply_patch", "mystery"):
            assert call(name, **inputs).kind in ("read", "write", "run", "search")

    @settings(max_examples=200, deadline=None)
    @given(st.text(), st.booleans())
    def test_any_result(self, content: str, is_error: bool) -> None:
        got = result_outcome(content, is_error, shell_action("make"))
        if is_error:
            assert not got.ok
