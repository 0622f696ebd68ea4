"""Real logs that break the providers' rules, read from files and replayed: every request must be valid.

Each shape here is one a user met in a real log that is not in the corpus
(issue 27): a Codex CLI rollout whose turns were aborted (a function call
with no output, a ``turn_aborted`` event, a compaction between them), and an
OpenHands V1 conversation with an assistant text block of only spaces. The
files are written here in the shapes the agents' sources give (see
``tests/formats/test_codex_rollouts.py`` and ``test_openhands_v1.py``), the
broken parts planted on purpose. Each is replayed under every preset at
32k, 64k and 128k, and under a window small enough that the presets
summarise, with recorded compactions undone and kept: no request may be
invalid, and the repair must say what it did in the report's notes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lab.core.messages import ToolResultBlock, ToolUseBlock
from lab.core.presets import preset_names
from lab.formats import load
from lab.replayer.engine import replay

TS = "2025-10-01T12:{:02d}:00.000Z"
WINDOWS = (32_000, 64_000, 128_000, 6_000)


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


# -- a Codex CLI rollout with aborted turns -------------------------------------------


def _line(minute: int, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": TS.format(minute % 60), "type": kind, "payload": payload}


def _codex_rollout(path: Path) -> Path:
    """Three tasks; the agent's calls in two of them were interrupted before their output came."""
    recs: list[dict[str, Any]] = [
        _line(0, "session_meta", {"id": "0199-abort", "timestamp": TS.format(0), "cwd": "/repo", "originator": "codex_cli_rs", "cli_version": "0.60.0"}),
    ]
    minute = 1
    call_no = 0

    def msg(role: str, text: str) -> None:
        nonlocal minute
        part = "input_text" if role == "user" else "output_text"
        recs.append(_line(minute, "response_item", {"type": "message", "role": role, "content": [{"type": part, "text": text}]}))
        minute += 1

    def call(output: str | None, *, cmd: str) -> None:
        nonlocal minute, call_no
        call_no += 1
        cid = f"call_{call_no:03d}"
        args = json.dumps({"command": ["bash", "-lc", cmd], "workdir": "/repo"})
        recs.append(_line(minute, "response_item", {"type": "function_call", "name": "shell", "arguments": args, "call_id": cid}))
        if output is not None:
            recs.append(_line(minute, "response_item", {"type": "function_call_output", "call_id": cid, "output": output}))
        minute += 1

    def aborted() -> None:
        nonlocal minute
        recs.append(_line(minute, "event_msg", {"type": "turn_aborted", "reason": "interrupted"}))
        msg("user", "<turn_aborted>\n  <reason>interrupted</reason>\n</turn_aborted>")

    body = "\n".join(f"line {i}: def handler_{i}(request): return render(request, 'page_{i}.html')" for i in range(120))
    msg("user", "Find why the login page fails and fix it.")
    for k in range(6):
        call(f"Exit code: 0\nOutput:\n{body}", cmd=f"cat src/views_{k}.py")
    call(None, cmd="pytest -x tests/test_login.py")  # interrupted mid-run: no output ever came
    aborted()
    msg("user", "Skip the tests, just look at settings.py.")
    call(f"Exit code: 0\nOutput:\n{body}", cmd="cat settings.py")
    msg("assistant", "The SESSION_COOKIE_SECURE flag is set for a plain-HTTP dev server.")
    # Codex's local compaction: the summary replaces the history
    recs.append(_line(minute, "compacted", {"message": "Summary: login fails because SESSION_COOKIE_SECURE is on in dev."}))
    minute += 1
    msg("user", "Now fix it and run the linter.")
    call(None, cmd="sed -i 's/True/False/' settings.py")  # two calls of one turn, both cut off
    call(None, cmd="ruff check .")
    aborted()
    msg("user", "Try once more.")
    for k in range(4):
        call(f"Exit code: 0\nOutput:\n{body}", cmd=f"ruff check src/views_{k}.py")
    msg("assistant", "Fixed: the flag is off in dev and the linter is clean.")
    return _write(path, recs)


# -- an OpenHands V1 conversation with a whitespace-only assistant text ----------------


def _oh_ev(eid: str, kind: str, source: str, **fields: Any) -> dict[str, Any]:
    return {"id": eid, "timestamp": "2025-11-05T10:00:00.123456", "source": source, **fields, "kind": kind}


def _oh_text(text: str) -> dict[str, Any]:
    return {"cache_prompt": False, "type": "text", "text": text}


def _openhands_v1(path: Path) -> Path:
    body = "\n".join(f"{i:4d}  value_{i} = compute({i}, scale=0.5)  # tuned by hand" for i in range(150))
    events: list[dict[str, Any]] = [
        _oh_ev("s0", "SystemPromptEvent", "agent", system_prompt=_oh_text("You are OpenHands agent."), tools=[]),
        _oh_ev("u0", "MessageEvent", "user", llm_message={"role": "user", "content": [_oh_text("Make compute() faster.")]}),
    ]
    for k in range(8):
        cid = f"toolu_{k:02d}"
        args = {"command": f"cat mod_{k}.py"}
        # the model's text beside the call is only spaces: what the user's real log held
        thought = [_oh_text("   ")] if k % 3 == 0 else []
        events.append(
            _oh_ev(
                f"a{k}", "ActionEvent", "agent", thought=thought, action={"kind": "TerminalAction", **args}, tool_name="terminal",
                tool_call_id=cid, tool_call={"id": cid, "name": "terminal", "arguments": json.dumps(args), "origin": "completion"},
                llm_response_id=f"resp-{k}", security_risk="LOW",
            )
        )
        observation = {"kind": "TerminalObservation", "content": [_oh_text(body)], "is_error": False, "command": args["command"], "exit_code": 0}
        events.append(_oh_ev(f"o{k}", "ObservationEvent", "environment", tool_name="terminal", tool_call_id=cid, observation=observation, action_id=f"a{k}"))
    events.append(_oh_ev("m9", "MessageEvent", "agent", llm_message={"role": "assistant", "content": [_oh_text("  \n ")]}, llm_response_id="resp-9"))
    events.append(_oh_ev("u1", "MessageEvent", "user", llm_message={"role": "user", "content": [_oh_text("And now?")]}))
    events.append(_oh_ev("m10", "MessageEvent", "agent", llm_message={"role": "assistant", "content": [_oh_text("Done: compute() caches its table.")]}, llm_response_id="resp-10"))
    path.write_text(json.dumps(events), encoding="utf-8")
    return path


SHAPES = {"codex-aborted-turns": (_codex_rollout, "rollout.jsonl"), "openhands-v1-blank-text": (_openhands_v1, "events.json")}


@pytest.fixture(scope="module", params=sorted(SHAPES))
def broken_file(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    build, name = SHAPES[request.param]
    return build(tmp_path_factory.mktemp(request.param) / name)


def test_the_source_itself_breaks_the_rules(broken_file: Path) -> None:
    """The planted fault is really in what the importer gives: the repair, not the reader, has work to do."""
    t = load(broken_file)
    uses = {b.id for m in t.messages for b in m.content if isinstance(b, ToolUseBlock)}
    results = {b.tool_use_id for m in t.messages for b in m.content if isinstance(b, ToolResultBlock)}
    blank = any(getattr(b, "text", "x").strip() == "" and hasattr(b, "text") for m in t.messages for b in m.content)
    assert (uses - results) or blank


@pytest.mark.parametrize("mode", ["undo", "keep"])
@pytest.mark.parametrize("window", WINDOWS, ids=lambda w: f"{w // 1000}k")
def test_every_request_is_valid_under_every_preset(broken_file: Path, window: int, mode: str) -> None:
    t = load(broken_file)
    for name in preset_names():
        report = replay(t, name, window=window, recorded_compactions=mode)  # type: ignore[arg-type]
        bad = [(row.index, row.problems[:2]) for row in report.rows if not (row.valid_anthropic and row.valid_openai)]
        assert not bad, f"{name} at {window}: {bad[:3]}"
        assert report.rows, name


def test_the_repair_says_what_it_did(broken_file: Path) -> None:
    report = replay(load(broken_file), "lab", window=128_000)
    said = " ".join(report.notes).lower()
    assert "synthetic" in said or "whitespace" in said or "blank" in said or "empty" in said, report.notes


def test_without_the_repair_the_same_replay_sends_invalid_requests(broken_file: Path) -> None:
    """The check above can fail: the same file replayed unrepaired sends requests a provider refuses."""
    report = replay(load(broken_file), "lab", window=128_000, repair=False)
    assert any(not (row.valid_anthropic and row.valid_openai) for row in report.rows)
