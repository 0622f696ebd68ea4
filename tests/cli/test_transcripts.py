"""``import``, ``export``, ``tokens`` and ``sessions`` (``lab.cli.transcripts``), run in-process through ``lab.cli.main``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli import SAMPLE, run as _run
from tests.conftest import SAMPLES


class TestImport:
    def test_writes_lab_json_and_prints_summary(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        out = tmp_path / "out.json"
        code, stdout, _ = _run(["import", str(SAMPLE), "--out", str(out), "--counter", "minicode"], capsys)
        assert code == 0
        data = json.loads(out.read_text())
        assert data["lab_transcript"] == 1
        assert "messages:" in stdout and "tool calls:" in stdout
        assert "tokens [minicode]:" in stdout and "skipped records:" in stdout

    def test_claude_code_sample_reports_skipped_records(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        src = SAMPLES / "claude-code-preview-xss.jsonl"  # named: other hand-written Claude Code samples skip nothing
        code, stdout, _ = _run(["import", str(src), "--out", str(tmp_path / "o.json"), "--counter", "chars/3.5"], capsys)
        assert code == 0
        skipped_line = next(line for line in stdout.splitlines() if line.startswith("skipped records:"))
        assert skipped_line != "skipped records: none"


class TestExportAndTokens:
    @pytest.mark.parametrize("to", ["anthropic", "openai"])
    def test_export_shapes(self, to: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        out = tmp_path / "req.json"
        code, _, _ = _run(["export", str(SAMPLE), "--to", to, "--out", str(out)], capsys)
        assert code == 0
        body = json.loads(out.read_text())
        assert body["messages"]
        if to == "openai":
            assert any(m["role"] == "tool" for m in body["messages"])
        else:
            assert all(m["role"] in ("user", "assistant") for m in body["messages"])

    def test_export_responses_shape(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        from tests.wire_rules import responses_wire_problems

        out = tmp_path / "req.json"
        code, stdout, _ = _run(["export", str(SAMPLE), "--to", "responses", "--out", str(out)], capsys)
        assert code == 0
        body = json.loads(out.read_text())
        assert set(body) <= {"instructions", "input", "tools"} and body["input"]
        kinds = {item["type"] for item in body["input"]}
        assert {"message", "function_call", "function_call_output"} <= kinds
        assert responses_wire_problems(body, strict=True, shape=True) == []
        assert f"as {len(body['input'])} input items to responses shape" in stdout

    def test_tokens_json(self, capsys: pytest.CaptureFixture[str]) -> None:
        code, stdout, _ = _run(["tokens", str(SAMPLE), "--counter", "minicode", "--counter", "o200k", "--json"], capsys)
        assert code == 0
        data = json.loads(stdout)
        assert set(data["tokens"]) == {"minicode", "o200k"}
        assert all(v > 0 for v in data["tokens"].values())
        assert 0 < data["tool_output_share"]["o200k"] < 1


def _pending_session(path: Path) -> Path:
    """A lab transcript cut off while its last two tool calls ran, with a blank user text on the way."""
    from lab.core.messages import Message, TextBlock, ToolUseBlock, Transcript
    from lab.formats import dump
    from tests.builders import call_and_result, system, user

    msgs = [system(), user("fix it"), *call_and_result("Read", "data", tool_id="t0", file_path="a.py")]
    msgs.append(Message(role="user", id="blank", content=(TextBlock(text="  \n"),)))
    msgs.append(Message(role="assistant", id="last", content=(TextBlock(text="Running both."), ToolUseBlock(id="t1", name="Bash"), ToolUseBlock(id="t2", name="Grep"))))
    dump(Transcript(messages=msgs), "lab", path)
    return path


class TestExportIsARequestTheApiTakes:
    @pytest.mark.parametrize("to", ["anthropic", "openai", "responses"])
    def test_pending_tool_calls_warn_and_note(self, to: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        src, out = _pending_session(tmp_path / "s.lab.json"), tmp_path / "req.json"
        code, stdout, stderr = _run(["export", str(src), "--to", to, "--out", str(out), "--keep-pending"], capsys)
        assert code == 0
        (warning,) = stderr.strip().splitlines()
        assert warning.startswith("warning: ") and "t1, t2" in warning and "--keep-pending" in warning
        text = json.dumps(json.loads(out.read_text()))
        results = text.count("tool_use_id") + text.count("tool_call_id") + text.count('"function_call_output"')
        assert results == 1  # only t0's, the pending ones stay unanswered with --keep-pending

    @pytest.mark.parametrize("to", ["anthropic", "openai"])
    def test_close_pending_answers_them_as_interrupted_errors(self, to: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        src, out = _pending_session(tmp_path / "s.lab.json"), tmp_path / "req.json"
        code, stdout, stderr = _run(["export", str(src), "--to", to, "--out", str(out), "--close-pending"], capsys)
        assert code == 0 and "warning" not in stderr
        assert "answered as 'interrupted'" in stdout
        body = json.loads(out.read_text())
        last = body["messages"][-1]
        if to == "anthropic":
            assert last == {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "interrupted", "is_error": True},
                    {"type": "tool_result", "tool_use_id": "t2", "content": "interrupted", "is_error": True},
                ],
            }
        else:
            assert body["messages"][-2:] == [
                {"role": "tool", "tool_call_id": "t1", "content": "interrupted"},
                {"role": "tool", "tool_call_id": "t2", "content": "interrupted"},
            ]

    @pytest.mark.parametrize("to", ["anthropic", "openai"])
    def test_exported_count_is_what_the_request_holds(self, to: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        src, out = _pending_session(tmp_path / "s.lab.json"), tmp_path / "req.json"
        code, stdout, _ = _run(["export", str(src), "--to", to, "--out", str(out)], capsys)
        assert code == 0
        n = len(json.loads(out.read_text())["messages"])
        # 6 messages read; the blank user text is dropped, Anthropic takes the system prompt out of messages, and the
        # two pending calls are answered (one user message of results for Anthropic, two tool messages for OpenAI).
        assert n == (5 if to == "anthropic" else 7)
        assert f"exported {n} messages to {to} shape" in stdout
        assert "whitespace-only text block" in stdout

    @pytest.mark.parametrize("to", ["anthropic", "openai"])
    def test_what_the_export_had_to_change_is_a_warning(self, to: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        from lab.core.messages import Message, ToolResultBlock, Transcript
        from lab.formats import dump
        from tests.builders import call_and_result, system, user

        # A result whose call is not in the file (a log cut at its start): sent as text, and said loudly.
        orphan = Message(role="user", id="orphan", content=(ToolResultBlock(tool_use_id="gone", content="old output"),))
        src, out = tmp_path / "s.lab.json", tmp_path / "req.json"
        dump(Transcript(messages=[system(), user("go on"), orphan, *call_and_result("Read", "data", tool_id="t0", file_path="a.py")]), "lab", src)
        code, stdout, stderr = _run(["export", str(src), "--to", to, "--out", str(out)], capsys)
        assert code == 0
        (warning,) = stderr.strip().splitlines()
        assert warning.startswith("warning: 1 tool result(s) whose call is not in this transcript sent as text") and "gone" in warning
        assert "whose call is not in this transcript" not in stdout
        assert "[tool result for gone" in out.read_text() and '"gone"' not in out.read_text()

    def test_no_warning_when_nothing_is_pending(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        code, _, stderr = _run(["export", str(SAMPLE), "--to", "anthropic", "--out", str(tmp_path / "r.json")], capsys)
        assert code == 0 and stderr == ""


def _goose_db(tmp_path: Path) -> Path:
    """A Goose sessions.db of two sessions of different lengths: the older has three exchanges, the newest one."""
    from tests.formats.test_goose_db import GooseDb, _conversation

    db = GooseDb(tmp_path / "sessions.db")
    db.session("20260101_1", "2026-01-01 09:00:00", name="long \x1b[31mred")
    db.session("20260102_1", "2026-01-02 09:00:00", name="short")
    for words in ("one", "two", "three"):
        _conversation(db, "20260101_1", words)
    _conversation(db, "20260102_1", "only")
    return db.path


class TestSessions:
    def test_sessions_prints_the_table_newest_first(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        code, stdout, _ = _run(["sessions", str(_goose_db(tmp_path))], capsys)
        assert code == 0
        lines = stdout.splitlines()
        assert lines[0].split() == ["id", "updated", "messages", "kind", "title"]
        assert lines[1].split()[:3] == ["20260102_1", "2026-01-02T09:00:00+00:00", "2"]
        assert lines[2].split()[:3] == ["20260101_1", "2026-01-01T09:00:00+00:00", "6"]
        # A title is the file's text: its escape sequence is shown, never sent to the terminal.
        assert "\x1b" not in stdout and "long \\x1b[31mred" in stdout
        assert lines[3].startswith("2 session(s) (goose_db), newest first")

    def test_sessions_json(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        code, stdout, _ = _run(["sessions", str(_goose_db(tmp_path)), "--json"], capsys)
        data = json.loads(stdout)
        assert code == 0 and [(s["id"], s["messages"], s["format"]) for s in data["sessions"]] == [("20260102_1", 2, "goose_db"), ("20260101_1", 6, "goose_db")]

    def test_import_and_export_read_the_session_asked(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        db = _goose_db(tmp_path)
        out = tmp_path / "s.lab.json"
        code, stdout, _ = _run(["import", str(db), "--session", "20260101_1", "--out", str(out)], capsys)
        assert code == 0 and "messages: 6 " in stdout
        assert json.loads(out.read_text())["meta"]["session_id"] == "20260101_1"
        request = tmp_path / "r.json"
        code, stdout, _ = _run(["export", str(db), "--session", "20260101_1", "--to", "anthropic", "--out", str(request)], capsys)
        body = json.loads(request.read_text())
        assert code == 0 and "exported 6 messages" in stdout and "three?" in json.dumps(body) and "only?" not in json.dumps(body)

    def test_tokens_and_replay_read_the_session_asked(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        db = _goose_db(tmp_path)
        counts = {}
        for sid in ("20260101_1", "20260102_1"):
            code, stdout, _ = _run(["tokens", str(db), "--session", sid, "--counter", "chars/3.5", "--json"], capsys)
            assert code == 0
            counts[sid] = json.loads(stdout)["tokens"]["chars/3.5"]
        assert counts["20260101_1"] > counts["20260102_1"] > 0
        report = tmp_path / "report.json"
        args = ["replay", str(db), "--preset", "minicode", "--window", "32000", "--report", str(report)]
        code, stdout, _ = _run([*args, "--session", "20260101_1"], capsys)
        assert code == 0 and "requests: 3;" in stdout
        code, stdout, _ = _run(args, capsys)
        assert code == 0 and "requests: 1;" in stdout

    def test_a_replay_of_the_default_session_says_which_it_read(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        db = _goose_db(tmp_path)
        report = tmp_path / "report.json"
        code, _, stderr = _run(["replay", str(db), "--preset", "minicode", "--report", str(report)], capsys)
        assert code == 0 and f"note: {db}: this Goose database holds 2 sessions" in stderr and "'20260102_1'" in stderr
        code, _, stderr = _run(["replay", str(db), "--preset", "minicode", "--report", str(report), "--session", "20260101_1"], capsys)
        assert code == 0 and "holds 2 sessions" not in stderr

    def test_a_folder_of_session_files(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        import os
        import shutil

        folder = tmp_path / "project"
        folder.mkdir()
        for name, sample, mtime in (("old.jsonl", "claude-code-compacted.jsonl", 1_700_000_000), ("new.jsonl", "generated-claude-code.jsonl", 1_800_000_000)):
            shutil.copyfile(SAMPLES / sample, folder / name)
            os.utime(folder / name, (mtime, mtime))
        code, stdout, _ = _run(["sessions", str(folder)], capsys)
        assert code == 0 and [line.split()[0] for line in stdout.splitlines()[1:3]] == ["new.jsonl", "old.jsonl"]
        assert "2 session(s) (claude_code)" in stdout
        code, _, stderr = _run(["tokens", str(folder)], capsys)
        assert code == 0 and "read the most recently modified, 'new.jsonl'" in stderr
        picked = [_run(["tokens", str(folder), "--session", name, "--counter", "chars/3.5", "--json"], capsys) for name in ("old.jsonl", "new.jsonl")]
        assert [json.loads(out)["tokens"]["chars/3.5"] for _, out, _ in picked] == [
            json.loads(_run(["tokens", str(folder / name), "--counter", "chars/3.5", "--json"], capsys)[1])["tokens"]["chars/3.5"]
            for name in ("old.jsonl", "new.jsonl")
        ]
        code, _, stderr = _run(["tokens", str(folder), "--session", "../project/new.jsonl"], capsys)
        assert code == 2 and stderr.startswith("error: ") and "not a session id of this folder" in stderr and len(stderr.splitlines()) == 1

    def test_compare_reads_the_session_asked(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        db = _goose_db(tmp_path)
        table = tmp_path / "table.json"
        code, stdout, _ = _run(["compare", str(db), "--session", "20260101_1", "--preset", "minicode", "--preset", "mewcode",
                                "--processes", "1", "--out", str(table)], capsys)
        rows = json.loads(table.read_text())["rows"]
        assert code == 0 and "compared 1 transcript(s) x 2 config(s)" in stdout
        assert {r["transcript"] for r in rows} == {f"{db.name} [20260101_1]"} and {r["requests"] for r in rows} == {3}

    @pytest.mark.parametrize(
        ("args", "says"),
        [
            (["tokens", "DB", "--session", "nope"], "no session 'nope' in this Goose database"),
            (["compare", "DB", "--session", "nope", "--preset", "minicode", "--out", "OUT"], "no session 'nope' in this Goose database"),
            (["import", "SAMPLE", "--session", "0", "--out", "OUT"], "holds one session"),
            (["replay", "SAMPLE", "--session", "0", "--preset", "minicode", "--report", "OUT"], "holds one session"),
            (["sessions", "MISSING"], "no such file"),
        ],
        ids=["unknown-id", "unknown-id-compare", "one-session-import", "one-session-replay", "missing"],
    )
    def test_errors_are_one_line(self, args: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        subst = {"DB": str(_goose_db(tmp_path)), "SAMPLE": str(SAMPLE), "OUT": str(tmp_path / "out.json"), "MISSING": str(tmp_path / "none.db")}
        code, _, stderr = _run([subst.get(a, a) for a in args], capsys)
        errors = [line for line in stderr.strip().splitlines() if not line.startswith("warning: ")]
        assert code == 2 and len(errors) == 1 and errors[0].startswith("error: ") and says in errors[0]
        assert not (tmp_path / "out.json").exists()


SURROGATES = Path(__file__).parents[1] / "formats" / "fixtures" / "surrogates" / "lone-surrogates.anthropic.json"
# Built from pieces, so the test file holds no string a secret scanner would flag.
_KEY_BODY = "Q8x2Lm4Np6Rt8Vx0Zb2Dc4Fe6Hg8Jk0Ml2Nn4Pp6"
ANT_KEY = "sk-" + "ant-api03-" + _KEY_BODY
AWS_KEY = "AKIA" + "IOSFODNN7EXAMPL1"


def _secret_session(path: Path) -> Path:
    """An Anthropic-shaped session with keys pasted in a user turn, a tool input and a tool result."""
    body = {
        "system": "You are a coding agent.",
        "messages": [
            {"role": "user", "content": f"Deploy with ANTHROPIC_API_KEY={ANT_KEY} please"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {"command": f"echo {ANT_KEY}"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": f"[default]\naws_access_key_id = {AWS_KEY}\n"}]},
            {"role": "assistant", "content": "Deployed; the scikit-learn task-1234567890abcdefghij step ran too."},
        ],
    }
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


class TestSecretsAndSurrogatesOnWrite:
    @pytest.mark.parametrize("args", [["import"], ["export", "--to", "anthropic"], ["export", "--to", "openai"], ["export", "--to", "responses"], ["export", "--to", "lab"]],
                             ids=["import", "export-anthropic", "export-openai", "export-responses", "export-lab"])
    def test_secrets_are_redacted_and_counted(self, args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        src, out = _secret_session(tmp_path / "s.json"), tmp_path / "out.json"
        code, _, stderr = _run([args[0], str(src), *args[1:], "--out", str(out)], capsys)
        text = out.read_text(encoding="utf-8")
        assert code == 0 and ANT_KEY not in text and AWS_KEY not in text
        assert "[REDACTED:anthropic-key]" in text and "[REDACTED:aws-access-key]" in text and "task-1234567890abcdefghij" in text
        json.loads(text)
        assert "note: redacted 2 secrets (anthropic-key 1, aws-access-key 1)" in stderr

    @pytest.mark.parametrize("verb", ["import", "export"])
    def test_no_redact_keeps_them(self, verb: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        src, out = _secret_session(tmp_path / "s.json"), tmp_path / "out.json"
        extra = ["--to", "anthropic"] if verb == "export" else []
        code, _, stderr = _run([verb, str(src), *extra, "--out", str(out), "--no-redact"], capsys)
        text = out.read_text(encoding="utf-8")
        assert code == 0 and ANT_KEY in text and AWS_KEY in text and "REDACTED" not in text and "redacted" not in stderr

    @pytest.mark.parametrize("args", [["import"], ["export", "--to", "anthropic"], ["export", "--to", "openai"], ["export", "--to", "responses"], ["export", "--to", "lab"]],
                             ids=["import", "export-anthropic", "export-openai", "export-responses", "export-lab"])
    def test_lone_surrogates_file_writes_valid_utf8(self, args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        out = tmp_path / "out.json"
        code, _, stderr = _run([args[0], str(SURROGATES), *args[1:], "--out", str(out)], capsys)
        assert code == 0 and "Traceback" not in stderr
        text = out.read_bytes().decode("utf-8")  # strict
        assert "\ufffd" in text and json.loads(text)

    def test_transcript_built_in_python_with_surrogates_writes(self, tmp_path: Path) -> None:
        # Strings the reader never saw: a Transcript made in Python, written by every writer of import and export.
        from lab.cli.transcripts import _write_body
        from lab.core.messages import Transcript
        from lab.formats import dump
        from lab.formats.export import to_anthropic, to_openai
        from tests.builders import call_and_result, system, user

        msgs = [system(), user("list \ud800"), *call_and_result("Bash", "a\udfff.txt\n", tool_id="toolu_\ud800", command="ls")]
        t = Transcript(messages=msgs)
        dump(t, to="lab", path=tmp_path / "t.lab.json")
        _write_body(to_anthropic(t), str(tmp_path / "a.json"))
        _write_body(to_openai(t), str(tmp_path / "o.json"))
        for name in ("t.lab.json", "a.json", "o.json"):
            text = (tmp_path / name).read_bytes().decode("utf-8")
            assert "\ufffd" in text and "\\ud800" not in text, name
            json.loads(text)


@pytest.mark.parametrize("to", ["anthropic", "openai", "responses"])
def test_export_answers_pending_calls_by_default_and_says_so(to: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every request the lab builds is one the API takes: the flag is no longer needed, and the change is said."""
    src, out = _pending_session(tmp_path / "s.lab.json"), tmp_path / "req.json"
    code, stdout, stderr = _run(["export", str(src), "--to", to, "--out", str(out)], capsys)
    assert code == 0 and "warning" not in stderr
    assert "answered as 'interrupted'" in stdout and "t1, t2" in stdout
    text = json.dumps(json.loads(out.read_text()))
    assert text.count("tool_use_id") + text.count("tool_call_id") + text.count('"function_call_output"') == 3


def test_export_to_lab_keeps_pending_calls_unless_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, out = _pending_session(tmp_path / "s.lab.json"), tmp_path / "out.lab.json"
    assert _run(["export", str(src), "--to", "lab", "--out", str(out)], capsys)[0] == 0
    assert out.read_text().count('"tool_use_id"') == 1
    assert _run(["export", str(src), "--to", "lab", "--out", str(out), "--close-pending"], capsys)[0] == 0
    assert out.read_text().count('"tool_use_id"') == 3
