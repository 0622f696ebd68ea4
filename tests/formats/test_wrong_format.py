"""Never a silent misread: a file forced into the wrong format is a clear error, and a degenerate
auto-detected read falls through to the next candidate (issue 11, section 3)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core.messages import Message, TextBlock, Transcript, message_text
from lab.errors import TranscriptError
from lab.formats import FORMATS, detect, dump, load
from lab.formats.registry import REQUEST_BODIES, Format
from lab.formats.sanity import MISREAD_PREFIX, misread_warnings
from tests.conftest import CORPUS_FILES, SAMPLES, corpus_id

SAMPLE_FILES = sorted(p for p in SAMPLES.iterdir() if p.is_file() and p.name != "README.md")
MANAGED = SAMPLES / "managed-agents-sample.events.jsonl"

# (detected, forced) pairs that legitimately read the same file, with the reason. Keep it short:
# every entry is a file two readers both understand, checked below to give the same conversation.
SHARED = {
    ("openai_chat", "anthropic"): "plain user/assistant text messages (a list or one per JSONL line) are valid for both APIs",
    ("anthropic", "openai_chat"): "plain user/assistant text messages (a list or one per JSONL line) are valid for both APIs",
}


def _forced_results(path: Path) -> list[str]:
    """Every other format that imports ``path`` (or crashes on it) instead of refusing it clearly."""
    detected = detect(path)
    bad: list[str] = []
    for name in FORMATS:
        if name == detected or (detected, name) in SHARED:
            continue
        try:
            t = load(path, format=name)
        except TranscriptError as exc:
            # A reader crash surfaces as "could not import as ...": an error, but not a clear one.
            if "could not import as" in str(exc) or not exc.reason:
                bad.append(f"{name}: unclear error: {exc}")
            continue
        roles = {r: sum(m.role == r for m in t.messages) for r in ("system", "user", "assistant")}
        bad.append(f"{name}: imported {len(t.messages)} messages {roles}")
    return bad


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=[p.name for p in SAMPLE_FILES])
def test_a_sample_forced_into_another_format_is_a_clear_error(path: Path) -> None:
    assert _forced_results(path) == []


@pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
def test_a_corpus_file_forced_into_another_format_is_a_clear_error(path: Path) -> None:
    assert _forced_results(path) == []


# --- the shared pairs are real -------------------------------------------------------------------

_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=40).filter(str.strip)


@settings(max_examples=25, deadline=None)
@given(turns=st.lists(st.tuples(_TEXT, _TEXT), min_size=1, max_size=5), jsonl=st.booleans())
def test_plain_text_messages_read_the_same_as_chat_and_anthropic(tmp_path_factory: pytest.TempPathFactory, turns: list[tuple[str, str]], jsonl: bool) -> None:
    messages = [m for q, a in turns for m in ({"role": "user", "content": q}, {"role": "assistant", "content": a})]
    path = tmp_path_factory.mktemp("shared") / "log.jsonl"
    path.write_text("\n".join(json.dumps(m) for m in messages) + "\n" if jsonl else json.dumps(messages), encoding="utf-8")
    chat, anthropic = load(path, format="openai_chat"), load(path, format="anthropic")
    assert [(m.role, message_text(m)) for m in chat.messages] == [(m.role, message_text(m)) for m in anthropic.messages]
    assert [(m.role, message_text(m)) for m in chat.messages] == [(m["role"], m["content"]) for m in messages]


# --- the wrapped Managed Agents stream (once read as 175 system messages) ------------------------


def _wrapped_list(tmp_path: Path) -> Path:
    records = [json.loads(line) for line in MANAGED.read_text(encoding="utf-8").splitlines() if line.strip()]
    path = tmp_path / "events.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


@pytest.mark.parametrize("forced", ["openai_chat", "anthropic", "openai_responses"])
def test_wrapped_managed_agents_events_forced_as_chat_raise(forced: str) -> None:
    with pytest.raises(TranscriptError) as err:
        load(MANAGED, format=forced)
    assert str(MANAGED) in str(err.value)


def test_wrapped_managed_agents_list_is_not_claimed_by_chat(tmp_path: Path) -> None:
    path = _wrapped_list(tmp_path)
    assert detect(path) == "managed_agents"
    with pytest.raises(TranscriptError):
        load(path, format="openai_chat")
    t = load(path)
    assert t.meta.source_format == "managed_agents"
    assert any(m.role == "user" for m in t.messages) and any(m.role == "assistant" for m in t.messages)


# --- auto-detection falls through a degenerate best candidate ------------------------------------


def _only_system(path: Path) -> Transcript:
    return Transcript(messages=[Message(role="system", content=(TextBlock(text=f"s{i}"),), id=f"s{i}") for i in range(5)])


# Which test double yields to which: declared, as the lab's own formats declare theirs (``Format.more_specific_than``).
_ABOVE: dict[str, tuple[str, ...]] = {"greedy": ("picky", "hollow", *REQUEST_BODIES), "picky": REQUEST_BODIES}


def _register(monkeypatch: pytest.MonkeyPatch, name: str, score: int, read: object) -> None:
    fmt = Format(name=name, description="test double", sniff=lambda p: score, read=read, more_specific_than=_ABOVE.get(name, ()))  # type: ignore[arg-type]
    monkeypatch.setitem(FORMATS, name, fmt)


def test_a_degenerate_best_candidate_falls_through_to_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    _register(monkeypatch, "greedy", 100, _only_system)
    path = SAMPLES / "openai-chat-ratelimit.openai.json"
    t = load(path)
    assert t.meta.source_format == "openai_chat"
    [warning] = misread_warnings(t.notes)
    assert "read as openai_chat" in warning and "greedy (100)" in warning and "5 of 5 messages are system messages" in warning


def test_the_best_candidates_own_error_stands(monkeypatch: pytest.MonkeyPatch) -> None:
    # Its refusal names the line and the expectation; a weaker claim read instead could be a misread.
    def refuse(path: Path) -> Transcript:
        raise TranscriptError("not mine after all", file=str(path), where="line 7")

    _register(monkeypatch, "picky", 100, refuse)
    with pytest.raises(TranscriptError, match="line 7: not mine after all"):
        load(SAMPLES / "openai-chat-ratelimit.openai.json")


def test_after_a_degenerate_best_candidate_later_errors_only_count_as_not_fitting(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(path: Path) -> Transcript:
        raise TranscriptError("not mine after all", file=str(path))

    _register(monkeypatch, "greedy", 100, _only_system)
    _register(monkeypatch, "picky", 99, refuse)
    t = load(SAMPLES / "openai-chat-ratelimit.openai.json")
    assert t.meta.source_format == "openai_chat"
    [warning] = misread_warnings(t.notes)
    assert "greedy (100): 5 of 5" in warning and "picky (99): not mine after all" in warning


def test_no_usable_candidate_names_each_and_what_was_wrong(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _register(monkeypatch, "greedy", 100, _only_system)
    hollow = Transcript(messages=[Message(role=r, id=f"h{i}") for i, r in enumerate(("user", "assistant"))])
    _register(monkeypatch, "hollow", 50, lambda p: hollow)
    path = tmp_path / "x.json"
    path.write_text('{"nobody": "claims this"}', encoding="utf-8")
    with pytest.raises(TranscriptError, match="no format gives a usable transcript") as err:
        load(path)
    text = str(err.value)
    assert "greedy (100): 5 of 5 messages are system messages" in text and "hollow (50): 2 of 2 messages are empty" in text
    assert text.index("greedy") < text.index("hollow")  # in specificity order


def test_when_every_candidate_refuses_the_best_ones_error_stands(tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl"
    good = {"role": "user", "content": "hi"}
    path.write_text(json.dumps(good) + "\n" + json.dumps(good) + "\n{not json\n" + json.dumps(good) + "\n", encoding="utf-8")
    with pytest.raises(TranscriptError, match="line 3") as err:
        load(path)
    assert "no format gives" not in str(err.value)


# --- forced formats ---------------------------------------------------------------------------------


def test_a_forced_degenerate_read_names_the_likely_formats() -> None:
    with pytest.raises(TranscriptError, match="the file looks like managed_agents \\(97\\)") as err:
        load(MANAGED, format="openai_responses")
    assert "messages are empty" in str(err.value)


def test_a_forced_read_with_only_user_turns_imports_with_a_loud_warning(tmp_path: Path) -> None:
    path = tmp_path / "started.jsonl"
    path.write_text('{"role": "user", "content": "fix it"}\n{"role": "user", "content": "please"}\n', encoding="utf-8")
    t = load(path, format="openai_chat")
    assert [m.role for m in t.messages] == ["user", "user"]
    [warning] = misread_warnings(t.notes)
    assert warning.startswith(MISREAD_PREFIX) and "no assistant turn" in warning
    assert misread_warnings(load(path).notes) == [warning]  # detected: the same warning


def test_an_empty_session_nothing_reads_better_imports_with_a_warning(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _register(monkeypatch, "hollow", 50, lambda p: Transcript())
    path = tmp_path / "x.json"
    path.write_text('{"nobody": "claims this"}', encoding="utf-8")
    t = load(path)
    assert t.messages == [] and misread_warnings(t.notes) == [MISREAD_PREFIX + "no messages"]
    with pytest.raises(TranscriptError, match="no usable transcript: no messages"):
        load(path, format="hollow")  # forced: no grace


def test_the_labs_own_json_is_never_degenerate_and_never_another_format(tmp_path: Path) -> None:
    path = tmp_path / "empty.lab.json"
    dump(Transcript(), path=path)
    assert load(path).messages == []
    with pytest.raises(TranscriptError, match="the lab's own JSON"):
        load(path, format="anthropic")


def test_a_sniffer_exception_is_a_no_logged_at_debug(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    def broken(probe: object) -> int:
        raise KeyError("sniffer bug")

    monkeypatch.setitem(FORMATS, "broken", Format(name="broken", description="", sniff=broken, read=_only_system))
    with caplog.at_level(logging.DEBUG, logger="lab.formats.detect"):
        t = load(SAMPLES / "openai-chat-ratelimit.openai.json")
    assert t.meta.source_format == "openai_chat" and misread_warnings(t.notes) == []
    [record] = [r for r in caplog.records if r.name == "lab.formats.detect"]
    assert record.levelno == logging.DEBUG and "broken" in record.getMessage() and record.exc_info is not None


def test_the_cli_prints_a_misread_warning_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from lab.cli.main import main

    path = tmp_path / "started.jsonl"
    path.write_text('{"role": "user", "content": "fix it"}\n', encoding="utf-8")
    assert main(["import", str(path), "--out", str(tmp_path / "out.lab.json")]) == 0
    err = capsys.readouterr().err
    assert err.startswith(f"warning: {path}: " + MISREAD_PREFIX + "no assistant turn")


# --- a plain chat inside another agent's record is not MiniCode (issue 27, section 0) -----------


def test_a_trajectory_with_more_than_messages_forced_as_minicode_is_refused(tmp_path: Path) -> None:
    # mini-swe-agent 1.x in text mode: plain role/content turns (a subset of MiniCode's shape) in a record of its own.
    doc = {
        "info": {"mini_version": "1.15"},
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}, {"role": "assistant", "content": "ok", "extra": {}}],
        "trajectory_format": "mini-swe-agent-1",
    }
    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(TranscriptError, match=r"trajectory_format is another agent's trajectory, not a MiniCode history"):
        load(path, format="minicode")
    # Its messages alone still carry mini-swe-agent's per-message record.
    path.write_text(json.dumps(doc["messages"]), encoding="utf-8")
    with pytest.raises(TranscriptError, match=r"a message with extra is another agent's record"):
        load(path, format="minicode")
    # The same turns without it are MiniCode's shape (a session id beside them too), and still read.
    path.write_text(json.dumps({"session_id": "s1", "messages": doc["messages"][:2]}), encoding="utf-8")
    assert [m.role for m in load(path, format="minicode").messages] == ["system", "user"]
