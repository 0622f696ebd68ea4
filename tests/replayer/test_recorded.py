"""Recorded compactions: undone by default so the config alone decides, kept on request, always reported."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import lab
from lab.core.messages import Boundary, Message, TextBlock, Transcript, TranscriptMeta, message_text
from lab.errors import ConfigError
from lab.formats import dump, load
from lab.formats.openhands import openhands
from lab.evaluation import compare
from lab.replayer.recorded import apply_recorded, find_recorded
from lab.replayer.settings import ReplaySettings
from tests import builders as b

FIRST = "Please fix the failing parser test in src/parse.py and keep the public API unchanged."
TS = "2025-11-05T10:00:00"


def _jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def _codex_line(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": TS + "Z", "type": kind, "payload": payload}


def _codex_msg(role: str, text: str) -> dict[str, Any]:
    part = "output_text" if role == "assistant" else "input_text"
    return _codex_line("response_item", {"type": "message", "role": role, "content": [{"type": part, "text": text}]})


def _oh_act(eid: int, action: str, args: dict[str, Any], source: str = "agent", **extra: Any) -> dict[str, Any]:
    # OpenHands V0 events as event_to_dict writes them (openhands/events/serialization/event.py).
    return {"id": eid, "timestamp": TS, "source": source, "message": "", "action": action, "args": args, **extra}


def _oh_events() -> list[dict[str, Any]]:
    meta = {"tool_call_id": "t1", "function_name": "execute_bash", "model_response": {"id": "r1", "choices": [{"message": {
        "role": "assistant", "content": "", "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "execute_bash", "arguments": "{\"command\": \"ls\"}"}}]}}]}}
    return [
        _oh_act(0, "system", {"content": "You are OpenHands."}),
        _oh_act(1, "message", {"content": FIRST}, source="user"),
        _oh_act(2, "run", {"command": "ls"}, tool_call_metadata=meta),
        {"id": 3, "timestamp": TS, "source": "agent", "message": "", "observation": "run", "content": "src\ntests", "extras": {}, "cause": 2,
         "tool_call_metadata": {"tool_call_id": "t1", "function_name": "execute_bash"}},
        _oh_act(4, "condensation", {"forgotten_event_ids": [2, 3], "forgotten_events_start_id": None, "forgotten_events_end_id": None,
                                    "summary": "USER_CONTEXT: fix the parser", "summary_offset": 1}),
        _oh_act(5, "message", {"content": "Next I will run the tests."}),
        _oh_act(6, "message", {"content": "go on"}, source="user"),
        _oh_act(7, "message", {"content": "Done."}),
    ]


def _claude_code(tmp_path: Path, work: int = 12) -> Path:
    """A Claude Code session that compacted once, halfway, with all its raw history still in the file."""
    lines: list[dict[str, Any]] = []
    parent: str | None = None

    def add(kind: str, **fields: Any) -> str:
        nonlocal parent
        uuid = f"e{len(lines):03d}"
        entry = {"parentUuid": parent, "isSidechain": False, "type": kind, "uuid": uuid, "sessionId": "s1",
                 "timestamp": f"2026-03-01T10:{len(lines) // 60:02d}:{len(lines) % 60:02d}.000Z", **fields}
        lines.append(entry)
        parent = uuid
        return uuid

    add("user", message={"role": "user", "content": FIRST})
    for i in range(work):
        tid = f"toolu_{i}"
        add("assistant", message={"id": f"msg_{i}", "role": "assistant", "model": "m", "content": [
            {"type": "tool_use", "id": tid, "name": "Read", "input": {"file_path": f"/repo/src/mod{i}.py"}}]})
        add("user", message={"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": f"def f{i}():\n" + "    x = 1\n" * 300}]})
        if i == work // 2:
            before = parent
            parent = None
            add("system", subtype="compact_boundary", content="Conversation compacted", logicalParentUuid=before,
                compactMetadata={"trigger": "auto", "preTokens": 40_000})
            add("user", isCompactSummary=True, message={"role": "user", "content": "This session is being continued from a previous conversation. Summary: parser work."})
    add("assistant", message={"id": "msg_end", "role": "assistant", "model": "m", "content": [{"type": "text", "text": "Done."}]})
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return path


def _first_kept_everywhere(report: lab.Report) -> bool:
    return all(r.first_request_kept is not False for r in report.rows) and report.first_request_kept is True


class TestFind:
    def test_a_claude_code_compaction_with_raw_history_before_it_is_undone(self, tmp_path: Path) -> None:
        t = load(_claude_code(tmp_path))
        found = find_recorded(t)
        assert [(c.agent, c.strategy, c.raw_before, c.action, c.written) for c in found] == [("Claude Code", "claude_code_compact", True, "undone", 1)]
        replayed, _, notes = apply_recorded(t, "undo")
        assert not any(m.boundary is not None or m.tag in ("boundary", "summary") for m in replayed.messages)
        assert len(replayed.messages) == len(t.messages) - 2
        assert any("undone" in n for n in notes)

    def test_keep_returns_the_transcript_as_recorded(self, tmp_path: Path) -> None:
        t = load(_claude_code(tmp_path))
        replayed, found, notes = apply_recorded(t, "keep")
        assert replayed is t and [c.action for c in found] == ["kept"] and "honoured" in notes[0]

    def test_a_session_that_starts_with_a_summary_keeps_it_as_the_first_user_turn(self) -> None:
        marker = Message(role="system", id="m0", tag="boundary", boundary=Boundary(trigger="import", strategy="claude_code_compact"))
        summary = Message(role="user", id="m1", tag="summary", content=(TextBlock(text="Summary of the earlier work."),))
        t = Transcript(meta=TranscriptMeta(source_format="claude_code"), messages=[marker, summary, b.assistant("continuing"), b.user("next"), b.assistant()])
        replayed, found, notes = apply_recorded(t, "undo")
        assert [c.action for c in found] == ["summary kept"]
        assert [m.id for m in replayed.messages][:1] == ["m1"]
        assert "not in the file" in notes[0]

    def test_a_continuation_summary_without_a_marker_is_reported(self) -> None:
        t = Transcript(messages=[b.user("This session is being continued from a previous conversation that ran out of context. ..."), b.assistant()])
        found = find_recorded(t)
        assert [(c.strategy, c.action) for c in found] == [("continuation_summary", "summary kept")]
        assert apply_recorded(t, "undo")[0].messages == t.messages

    def test_a_lab_session_with_its_own_boundaries(self, tmp_path: Path) -> None:
        history = b.session(n_reads=12, size=6000)
        # A lab file written from a compacted context: marker, summary, tail; the raw history is gone.
        context = lab.Compactor(lab.preset("minicode")).compact(history).messages
        assert any(m.boundary is not None for m in context)
        path = tmp_path / "compacted.lab.json"
        path.write_text(json.dumps(dump(Transcript(meta=TranscriptMeta(source_format="lab"), messages=context))), encoding="utf-8")
        found = find_recorded(load(path))
        assert found and all(c.agent == "Compaction Lab" and c.action == "summary kept" for c in found)

    def test_unknown_mode_is_a_config_error(self) -> None:
        with pytest.raises(ConfigError, match="undo"):
            apply_recorded(Transcript(), "forget")  # type: ignore[arg-type]


class TestCodex:
    def test_replacement_history_copies_are_dropped_with_the_marker(self, tmp_path: Path) -> None:
        summary = "Another language model started to solve this problem and produced a summary of its thinking process.\nWe fixed a.py."
        history = [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix a.py"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": summary}]},
        ]
        records = [_codex_msg("user", "fix a.py"), _codex_msg("assistant", "fixed"),
                   _codex_line("compacted", {"message": summary, "replacement_history": history}),
                   _codex_msg("user", "next"), _codex_msg("assistant", "ok")]
        t = load(_jsonl(tmp_path / "rollout.jsonl", records))
        marker = next(m for m in t.messages if m.boundary is not None)
        assert marker.boundary is not None and marker.boundary.replaced_messages == 2
        replayed, found, _ = apply_recorded(t, "undo")
        assert [c.action for c in found] == ["undone"]
        assert [message_text(m) for m in replayed.messages if m.role == "user"] == ["fix a.py", "next"]


class TestOpenHands:
    def test_v0_condensation_is_undone(self) -> None:
        t = openhands.from_document(_oh_events(), file="x.json")
        found = find_recorded(t)
        assert [(c.agent, c.action) for c in found] == [("OpenHands", "undone")]
        replayed, _, _ = apply_recorded(t, "undo")
        assert "USER_CONTEXT: fix the parser" not in "".join(message_text(m) for m in replayed.messages)
        assert len(replayed.messages) == len(t.messages) - 2

    def test_v0_condensation_without_summary_is_undone_or_kept(self) -> None:
        events = _oh_events()
        events[4] = _oh_act(4, "condensation", {"forgotten_event_ids": [2, 3], "forgotten_events_start_id": None,
                                                "forgotten_events_end_id": None, "summary": None, "summary_offset": None})
        t = openhands.from_document(events, file="x.json")
        assert [(c.agent, c.action) for c in find_recorded(t)] == [("OpenHands", "undone")]
        undone, _, _ = apply_recorded(t, "undo")
        assert len(undone.messages) == len(t.messages) - 2 and not any(m.boundary is not None for m in undone.messages)
        assert FIRST in message_text(undone.messages[1])
        kept, found, _ = apply_recorded(t, "keep")
        assert kept is t and [c.action for c in found] == ["kept"]

    def test_v1_condensation_is_undone(self, tmp_path: Path) -> None:
        def ev(eid: str, kind: str, source: str, **fields: Any) -> dict[str, Any]:
            return {"id": eid, "timestamp": TS, "source": source, **fields, "kind": kind}

        def text(x: str) -> dict[str, Any]:
            return {"type": "text", "text": x}

        events = [
            ev("e1", "SystemPromptEvent", "agent", system_prompt=text("You are OpenHands agent."), tools=[]),
            ev("e2", "MessageEvent", "user", llm_message={"role": "user", "content": [text(FIRST)]}),
            ev("m1", "MessageEvent", "agent", llm_message={"role": "assistant", "content": [text("Looking.")]}, llm_response_id="r1"),
            ev("e3", "MessageEvent", "user", llm_message={"role": "user", "content": [text("continue")]}),
            ev("k1", "Condensation", "environment", forgotten_event_ids=["m1"], summary="USER_CONTEXT: parser", summary_offset=1),
            ev("m2", "MessageEvent", "agent", llm_message={"role": "assistant", "content": [text("Done.")]}, llm_response_id="r2"),
        ]
        t = load(_jsonl(tmp_path / "events.jsonl", events))
        found = find_recorded(t)
        assert found and found[0].agent == "OpenHands" and found[0].action == "undone"
        assert not any(m.boundary is not None for m in apply_recorded(t, "undo")[0].messages)


class TestContinue:
    @staticmethod
    def _session(tmp_path: Path, history: list[dict[str, Any]]) -> Path:
        p = tmp_path / "s.json"
        items = [{"message": {"role": r, "content": c}, "contextItems": [], **kw} for r, c, kw in history]
        p.write_text(json.dumps({"sessionId": "s", "title": "t", "workspaceDirectory": "/w", "history": items}), encoding="utf-8")
        return p

    def test_the_extension_s_summary_is_undone_and_named(self, tmp_path: Path) -> None:
        t = load(self._session(tmp_path, [("user", FIRST, {}), ("assistant", "Reading src/parse.py.", {"conversationSummary": "We read it."}),
                                          ("user", "go on", {}), ("assistant", "Done.", {})]))
        found = find_recorded(t)
        assert [(c.agent, c.action) for c in found] == [("Continue", "undone")]
        report = lab.replay(t, "lab", window=32_000)
        assert report.first_request_kept is True and report.requests == 2

    def test_cn_s_summary_without_its_history_is_kept_and_is_no_request(self, tmp_path: Path) -> None:
        # cn replaces the history with [system, "[COMPACTED HISTORY]" assistant]: the raw history is gone.
        t = load(self._session(tmp_path, [("system", "You are cn.", {}), ("assistant", "[COMPACTED HISTORY]\nWe fixed src/parse.py.", {}),
                                          ("user", "now run the tests", {}), ("assistant", "Tests pass.", {})]))
        found = find_recorded(t)
        assert [(c.agent, c.action) for c in found] == [("Continue (cn)", "summary kept")]
        report = lab.replay(t, "lab", window=32_000)
        # The summary answered cn's compaction call, not an agent request: one request, and a valid one.
        assert report.requests == 1 and report.invalid_requests == 0
        assert "first turn" in found[0].describe()


class TestReplay:
    @pytest.mark.parametrize("window", [32_000, 64_000])
    @pytest.mark.parametrize("name", ["minicode", "mewcode", "codex", "claude-code"])
    def test_undo_keeps_the_first_request_where_keep_loses_it(self, tmp_path: Path, name: str, window: int) -> None:
        t = load(_claude_code(tmp_path))
        undone = lab.replay(t, name, window=window)
        kept = lab.replay(t, name, window=window, recorded_compactions="keep")
        assert undone.recorded_compactions_mode == "undo" and undone.recorded_compactions == 1
        assert kept.recorded_compactions_mode == "keep"
        assert _first_kept_everywhere(undone)
        # Honoured, the recorded boundary drops the first request whatever the config does.
        assert kept.first_request_kept is False
        assert undone.recorded[0].action == "undone" and any("recorded compaction" in n for n in undone.notes)

    def test_mode_comes_from_the_settings_and_round_trips_in_the_report(self, tmp_path: Path) -> None:
        settings = ReplaySettings(recorded_compactions="keep")
        report = lab.replay(load(_claude_code(tmp_path)), "minicode", settings=settings, window=32_000)
        assert report.recorded_compactions_mode == "keep" and report.settings["recorded_compactions"] == "keep"
        # The keyword overrides the settings.
        undone = lab.replay(load(_claude_code(tmp_path)), "minicode", settings=settings, window=32_000, recorded_compactions="undo")
        assert undone.recorded_compactions_mode == "undo"
        again = lab.Report.from_dict(json.loads(json.dumps(report.to_dict())))
        assert again.recorded_compactions_mode == "keep" and again.recorded == report.recorded

    def test_bad_override_is_a_config_error(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match="recorded_compactions"):
            lab.replay(b.session(n_reads=2), "minicode", recorded_compactions="maybe")  # type: ignore[arg-type]

    def test_compare_columns(self, tmp_path: Path) -> None:
        table = compare(load(_claude_code(tmp_path)), ["minicode", "mewcode"], window=32_000)
        assert [r["recorded_compactions"] for r in table.rows] == [1, 1]
        assert {r["recorded_compactions_mode"] for r in table.rows} == {"undo"}
        assert "recorded_compactions" in table.df.columns


class TestCli:
    def test_replay_and_compare_take_the_mode(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        from lab.cli.main import main

        path = _claude_code(tmp_path)
        for mode in ("undo", "keep"):
            out = tmp_path / f"{mode}.json"
            assert main(["replay", str(path), "--preset", "minicode", "--window", "32000", "--report", str(out), "--recorded-compactions", mode]) == 0
            report = lab.Report.read(out)
            assert report.recorded_compactions_mode == mode and report.recorded_compactions == 1
        printed = capsys.readouterr().out
        assert "note: recorded compaction: Claude Code compaction" in printed
        table = tmp_path / "table.csv"
        assert main(["compare", str(path), "--preset", "minicode", "--window", "32000", "--processes", "1", "--out", str(table), "--recorded-compactions", "keep"]) == 0
        assert "keep" in table.read_text(encoding="utf-8")

    def test_a_bad_mode_exits_2(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        from lab.cli.main import main

        rc = main(["replay", str(_claude_code(tmp_path)), "--preset", "minicode", "--report", str(tmp_path / "r.json"), "--recorded-compactions", "forget"])
        assert rc == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error:") and "--recorded-compactions" in err[0]
