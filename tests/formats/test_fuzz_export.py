"""Fuzzing the exporters: whatever an importer accepts, a body the provider takes, or the documented refusal.

Inputs are (1) the transcripts the importers accept from their damaged real seeds, drawn with the
importer fuzz's own seeds and mutations (``test_fuzz_importers``), and (2) message sequences built
from ``tests.builders`` and odd blocks: orphan tool results, unanswered and duplicated calls, empty
and whitespace-only text, consecutive same-role messages, system messages in the middle, images with
and without a URL, thinking with and without a signature, boundary markers, huge and non-ASCII text.

For each, with and without ``close_pending``, ``to_anthropic`` and ``to_openai`` must
  (a) raise nothing but ``LabError``, and give a body that is strict JSON (the CLI writes it);
  (b) give a body that, read back block for block, ``lab.core.validate`` finds no fault in: under
      ``close_pending`` none at all, without it only calls left unanswered; either way a body opened
      by the assistant (or empty) only where the source was so; and the body has the shape
      ``lab.formats.export`` documents (roles alternate, tool results first, no blank text, signed
      thinking only, no trailing whitespace on the final assistant text);
  (c) under ``close_pending``, answer every call;
  (d) keep every tool call, and every tool result either as a result or as text saying what it was
      (an orphan, a repeat), with a note counting each result sent as text or moved.

Derandomized and fast by default; to hunt, raise the count and let hypothesis pick fresh examples::

    LAB_FUZZ_EXAMPLES=500 LAB_FUZZ_RANDOM=1 python -m pytest -q tests/formats/test_fuzz_export.py
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core.messages import (
    Block,
    Boundary,
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
    Transcript,
    is_sent,
)
from lab.core.validate import anthropic_problems, openai_problems
from lab.errors import LabError, TranscriptError
from lab.formats.export import to_anthropic, to_openai
from lab.formats.tool_results import anthropic_tool_id, openai_tool_id, pending_tool_calls, settle_tool_results
from tests.builders import assistant, call_and_result, system, tool_call, tool_result, user
from tests.conftest import SAMPLES
from tests.formats.test_fuzz_importers import TARGETS, Target, _inputs, _seeds, _write, fuzz_settings

_SETTINGS = fuzz_settings(12)

Exporter = Callable[..., dict[str, Any]]


# --- bodies read back, block for block (no importer: importers repair what they read) -------------------


def _strict_json(body: dict[str, Any]) -> Any:
    # NaN and Infinity are not JSON: a provider refuses the request they are in.
    return json.loads(json.dumps(body, allow_nan=False, ensure_ascii=False))


def _anthropic_block(d: dict[str, Any]) -> Block:
    kind = d["type"]
    if kind == "text":
        return TextBlock(text=d["text"])
    if kind == "thinking":
        assert isinstance(d["signature"], str), d
        return ThinkingBlock(thinking=d["thinking"], signature=d["signature"])
    if kind == "tool_use":
        assert isinstance(d["input"], dict), d
        return ToolUseBlock(id=d["id"], name=d["name"], input=d["input"])
    if kind == "tool_result":
        assert isinstance(d["content"], str), d
        return ToolResultBlock(tool_use_id=d["tool_use_id"], content=d["content"], is_error=d.get("is_error", False))
    assert kind == "image" and d["source"]["type"] == "url" and d["source"]["url"], d
    return ImageBlock(source="url", url=d["source"]["url"])


def anthropic_messages(body: dict[str, Any]) -> list[Message]:
    """An Anthropic body as canonical messages, one for one."""
    out: list[Message] = []
    if "system" in body:
        assert isinstance(body["system"], str) and body["system"].strip(), body["system"]
        out.append(Message(role="system", id="system", content=(TextBlock(text=body["system"]),)))
    for k, m in enumerate(body["messages"]):
        assert m["role"] in ("user", "assistant") and isinstance(m["content"], list), m
        out.append(Message(role=m["role"], id=f"body{k}", content=tuple(_anthropic_block(b) for b in m["content"])))
    return out


def _openai_content(content: Any) -> tuple[Block, ...]:
    if isinstance(content, str):
        return (TextBlock(text=content),)
    assert isinstance(content, list), content
    blocks: list[Block] = []
    for part in content:
        if part["type"] == "text":
            blocks.append(TextBlock(text=part["text"]))
        else:
            assert part["type"] == "image_url" and part["image_url"]["url"], part
            blocks.append(ImageBlock(source="url", url=part["image_url"]["url"]))
    return tuple(blocks)


def openai_messages(body: dict[str, Any]) -> list[Message]:
    """An OpenAI body as canonical messages: a ``tool`` message is a user message holding its result."""
    out: list[Message] = []
    for k, m in enumerate(body["messages"]):
        mid = f"body{k}"
        if m["role"] == "tool":
            assert isinstance(m["content"], str), m
            out.append(Message(role="user", id=mid, content=(ToolResultBlock(tool_use_id=m["tool_call_id"], content=m["content"]),)))
        elif m["role"] == "assistant":
            blocks: list[Block] = [] if m["content"] is None else list(_openai_content(m["content"]))
            for c in m.get("tool_calls", []):
                assert c["type"] == "function", c
                args = json.loads(c["function"]["arguments"])
                assert isinstance(args, dict), c
                blocks.append(ToolUseBlock(id=c["id"], name=c["function"]["name"], input=args))
            out.append(Message(role="assistant", id=mid, content=tuple(blocks)))
        else:
            assert m["role"] in ("system", "user"), m
            out.append(Message(role=m["role"], id=mid, content=_openai_content(m["content"])))
    return out


# The Anthropic API refuses other tool ids ("String should match pattern"); OpenAI takes ids of at most 40 characters.
_ANTHROPIC_ID = re.compile(r"[A-Za-z0-9_-]+")


def anthropic_shape_problems(body: dict[str, Any]) -> list[str]:
    """What ``lab.formats.export`` documents about an Anthropic body beyond the validator's rules."""
    problems: list[str] = []
    turns = body["messages"]
    for k, m in enumerate(turns):
        if k and turns[k - 1]["role"] == m["role"]:
            problems.append(f"turn {k}: two {m['role']} turns in a row")
        kinds = [b["type"] for b in m["content"]]
        if m["role"] == "user" and kinds != sorted(kinds, key=lambda t: t != "tool_result"):
            problems.append(f"turn {k}: a tool result after other content")
        for b in m["content"]:
            if b["type"] == "tool_result" and b.get("is_error") and not b["content"].strip():
                problems.append(f"turn {k}: empty error result")
            tool_id = b.get("id") if b["type"] == "tool_use" else b.get("tool_use_id")
            if tool_id is not None and not _ANTHROPIC_ID.fullmatch(tool_id):
                problems.append(f"turn {k}: tool id {tool_id!r} is not of the API's pattern")
    if turns and turns[-1]["role"] == "assistant":
        last = turns[-1]["content"][-1]
        if last["type"] == "text" and last["text"] != last["text"].rstrip():
            problems.append("final assistant text ends in whitespace")
    return problems


def openai_shape_problems(body: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    for k, m in enumerate(body["messages"]):
        content = m.get("content")
        if m["role"] in ("user", "system") and isinstance(content, str) and not content.strip():
            problems.append(f"message {k}: blank {m['role']} text")
        for tool_id in [c["id"] for c in m.get("tool_calls", [])] + ([m["tool_call_id"]] if m["role"] == "tool" else []):
            if not 0 < len(tool_id) <= 40:
                problems.append(f"message {k}: tool call id of {len(tool_id)} characters")
    return problems


# --- the properties -------------------------------------------------------------------------------------

def _kind(problem: str) -> str:
    kind = re.sub(r"^message \d+ \(\w+, id [^)]*\): ", "", problem)
    # A source opened by the assistant may export to nothing at all: the one fault it forces.
    return "no user opening" if kind == "no user or assistant message to send" else kind


def _opened_by_user(messages: Sequence[Message]) -> bool:
    return next((m.role for m in messages if m.role != "system"), None) == "user"


def _unasked_problem(problem: str) -> bool:
    return re.search(r"(is not answered by a tool_result in the next message|is not answered before the next message)$", problem) is not None


def _uses(messages: Sequence[Message]) -> set[str]:
    return {b.id for m in messages if m.role == "assistant" for b in m.content if isinstance(b, ToolUseBlock)}


def _results(messages: Sequence[Message]) -> set[str]:
    # Any role: a result misfiled in an assistant message is still the source's result.
    return {b.tool_use_id for m in messages for b in m.content if isinstance(b, ToolResultBlock)}


def _unanswered(messages: Sequence[Message]) -> set[str]:
    """Calls that no message answers."""
    return _uses(messages) - {b.tool_use_id for m in messages for b in m.content if isinstance(b, ToolResultBlock)}


def _count(messages: Sequence[Message], kind: type) -> int:
    return sum(isinstance(b, kind) for m in messages for b in m.content)


_AS_TEXT = re.compile(r"\[(?:another )?tool result for .*?, whose call (?:is not in this transcript|was already answered)")


def _results_as_text(body: dict[str, Any]) -> int:
    return len(_AS_TEXT.findall(json.dumps(body, ensure_ascii=False)))


def _noted(notes: Sequence[str], what: str) -> int:
    return sum(int(m.group(1)) for n in notes if (m := re.match(rf"(\d+) {what}", n)))


_PROVIDERS: list[tuple[str, Exporter, Callable[[dict[str, Any]], list[Message]], Callable[..., list[str]], Callable[[dict[str, Any]], list[str]]]] = [
    ("anthropic", to_anthropic, anthropic_messages, anthropic_problems, anthropic_shape_problems),
    ("openai", to_openai, openai_messages, openai_problems, openai_shape_problems),
]


def check_exports(source: Transcript | Sequence[Message]) -> None:
    """Properties (a)-(d) of the module docstring, for both providers, with and without close_pending."""
    messages = list(source.messages if isinstance(source, Transcript) else source)
    sent = [m for m in messages if is_sent(m)]
    for close in (False, True):
        for name, export, read_back, problems_of, shape_of in _PROVIDERS:
            notes: list[str] = []
            try:
                body = export(source, notes=notes, close_pending=close)
            except LabError:
                continue  # (a): a refusal in the lab's own terms
            where = f"{name}, close_pending={close}"
            body = _strict_json(body)
            got = read_back(body)
            # (b) nothing the API refuses but what the source forces (its opening) or close_pending would close.
            problems = [p for p in problems_of(got) if _opened_by_user(sent) or _kind(p) != "no user opening"]
            left = problems if close else [p for p in problems if not _unasked_problem(p)]
            assert not left, f"{where}: the API would refuse the body: {left}\nnotes: {notes}"
            assert not shape_of(body), f"{where}: {shape_of(body)}"
            # (c) every call answered under close_pending.
            if close:
                assert not _unanswered(got), f"{where}: unanswered calls left: {sorted(_unanswered(got))}"
            # (d) every call kept; every result kept, as a result or as text that says what it was, and counted.
            calls = sum(isinstance(b, ToolUseBlock) for m in sent if m.role == "assistant" for b in m.content)
            assert _count(got, ToolUseBlock) == calls, f"{where}: calls lost"
            as_text = _results_as_text(body)
            kept = _count(got, ToolResultBlock) - (len(_unanswered_before_close(sent, name)) if close else 0)
            assert kept + as_text == _count(sent, ToolResultBlock), f"{where}: results lost ({kept} + {as_text} as text)"
            noted = _noted(notes, r"tool result\(s\) whose call is not") + _noted(notes, "repeated tool result")
            assert noted == as_text, f"{where}: {as_text} results sent as text, {noted} in the notes: {notes}"


def _unanswered_before_close(sent: Sequence[Message], provider: str) -> list[str]:
    """The calls close_pending answers: those left open once the results are settled."""
    rule = anthropic_tool_id if provider == "anthropic" else openai_tool_id
    return pending_tool_calls(settle_tool_results(sent, tool_id=rule))


# --- (1) what the importers accept from damaged real seeds ---------------------------------------------


@pytest.fixture(scope="module")
def work() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="fuzz-export-"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("target", TARGETS, ids=[t.id for t in TARGETS])
def test_exports_of_imported_damaged_seeds(work: Path, target: Target) -> None:
    _seeds(target.id)  # built outside @given: some seed builders are hypothesis-driven themselves
    @_SETTINGS
    @given(case=_inputs(target.id))
    def run(case: tuple[str, Any]) -> None:
        try:
            t = target.read(_write(work / target.id, target, case[1]))
        except TranscriptError:
            return  # refused on import: the importer fuzz's concern
        check_exports(t)

    run()


# --- (2) hypothesis-built message sequences ------------------------------------------------------------

# Ids the providers refuse as written too: a character Anthropic refuses, two that collide once it is replaced,
# and one longer than OpenAI's 40 characters.
_ID_POOL = ["t1", "t2", "t3", "toolu_é", "t.1", "t_1", "call_" + "x" * 45]
_texts = st.sampled_from(["", " ", "\n\t ", "hi", "done.\n\n", "héllo ☃ 𝄞 数据", "<script>x</script>", "[system] s", "x" * 200_000])
_ids = st.sampled_from(_ID_POOL)
_inputs_ = st.sampled_from([{}, {"path": "a.py"}, {"q": "数据", "n": [1, 2.5, None]}])


def _blocks(role: str) -> st.SearchStrategy[Block]:
    text = _texts.map(lambda t: TextBlock(text=t))
    thinking = st.builds(ThinkingBlock, thinking=_texts, signature=st.none() | st.sampled_from(["sig", ""]))
    image = st.builds(ImageBlock, size_bytes=st.integers(0, 10**6), url=st.none() | st.just("https://x.test/i.png"))
    use = st.builds(ToolUseBlock, id=_ids, name=st.sampled_from(["Read", "Bash"]), input=_inputs_)
    result = st.builds(ToolResultBlock, tool_use_id=_ids, content=_texts, is_error=st.booleans())
    if role == "assistant":
        return text | thinking | use | image | result  # a result misfiled in an assistant message too
    return text | result | image | thinking


@st.composite
def _odd_message(draw: st.DrawFn, k: int) -> list[Message]:
    kind = draw(st.sampled_from(["user", "assistant", "system", "boundary", "pair", "call", "result", "orphan", "late", "raw_user", "raw_assistant"]))
    if kind == "user":
        return [user(draw(_texts))]
    if kind == "assistant":
        return [assistant(draw(_texts), thinking=draw(st.none() | _texts))]
    if kind == "system":
        return [system(draw(_texts))]
    if kind == "boundary":
        return [Message(role="system", id=f"b{k}", content=(TextBlock(text="[compacted]"),), tag="boundary", boundary=Boundary(trigger="auto", strategy="full"))]
    if kind == "pair":
        return call_and_result("Read", draw(_texts), tool_id=draw(_ids), is_error=draw(st.booleans()), file_path="a.py")
    if kind == "call":
        return [tool_call("Bash", draw(_ids), text=draw(st.none() | _texts), command="ls")]
    if kind == "result":
        return [tool_result(draw(_ids), draw(_texts), is_error=draw(st.booleans()))]
    if kind == "orphan":
        # A result whose call is in no message: a log cut at its start, a subagent's result.
        return [tool_result(f"lost{k}", draw(_texts), is_error=draw(st.booleans()))]
    if kind == "late":
        # A result logged after other turns (or before its call: then it is an orphan and the call is open).
        call, result = call_and_result("Read", draw(_texts), tool_id=f"late{k}", file_path="a.py")
        between = [draw(st.sampled_from([user("more"), assistant("meanwhile"), system("mid")])) for _ in range(draw(st.integers(1, 2)))]
        return draw(st.sampled_from([[call, *between, result], [result, *between, call]]))
    role = "user" if kind == "raw_user" else "assistant"
    return [Message(role=role, id=f"m{k}", content=tuple(draw(st.lists(_blocks(role), max_size=4))))]


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    out: list[Message] = []
    for k in range(draw(st.integers(0, 10))):
        out += draw(_odd_message(k))
    return out


def test_exports_of_built_histories() -> None:
    @settings(_SETTINGS, max_examples=_SETTINGS.max_examples * 20)
    @given(msgs=histories())
    def run(msgs: list[Message]) -> None:
        check_exports(msgs)

    run()


def test_exports_with_tools_stay_json() -> None:
    t = Transcript(messages=[user("hi")], tools=[ToolSpec(name="Read", description="r é", input_schema={"type": "object"})])
    for _, export, *_rest in _PROVIDERS:
        assert _strict_json(export(t))["tools"]


def test_the_checker_catches_a_broken_body() -> None:
    # The properties must be able to fail: an orphan result in a body is a problem, and a lost result is seen.
    body = {"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t9", "content": "x"}]}]}
    got = anthropic_messages(body)
    assert anthropic_problems(got) and not _unasked_problem(anthropic_problems(got)[0])
    assert _unasked_problem(anthropic_problems([user("go"), tool_call("A", "t1")])[0])
    assert _unanswered([tool_call("A", "t1"), tool_result("t2", "x")]) == {"t1"}
    assert _results_as_text({"messages": [{"role": "user", "content": "[tool result for t9, whose call is not in this transcript]"}]}) == 1
    assert _noted(["2 tool result(s) whose call is not in this transcript sent as text (a, b)"], r"tool result\(s\) whose call is not") == 2
    assert math.isnan(float("nan"))
    with pytest.raises(ValueError):
        _strict_json({"x": float("nan")})


# --- the CLI, once per provider --------------------------------------------------------------------------

_CLI_SAMPLES = ["claude-code-compacted.jsonl", "openai-chat-ratelimit.openai.json", "codex-rollout-forecast.jsonl", "generated-errors.lab.json"]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lab", "export", *args], capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[2])


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_cli_export_gives_bodies_that_validate(tmp_path: Path, provider: str) -> None:
    read_back, problems_of = (anthropic_messages, anthropic_problems) if provider == "anthropic" else (openai_messages, openai_problems)
    for name in _CLI_SAMPLES:
        out = tmp_path / f"{name}.{provider}.json"
        done = _cli(str(SAMPLES / name), "--to", provider, "--out", str(out), "--close-pending")
        assert done.returncode == 0, done.stderr
        body = json.loads(out.read_text(encoding="utf-8"))
        assert body["messages"] and not problems_of(read_back(body)), name
        assert f"exported {len(body['messages'])} messages" in done.stdout
    broken = tmp_path / "broken.json"
    broken.write_text('{"messages": [{"role": ', encoding="utf-8")
    done = _cli(str(broken), "--to", provider, "--out", str(tmp_path / "x.json"))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert not list(tmp_path.glob("*x.json*"))
