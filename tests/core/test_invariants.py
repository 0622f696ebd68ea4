"""Invariants of the whole core, on generated sessions and on every real transcript.

An agent loop is simulated: at every request point (each index where an
assistant message follows a non-assistant one, plus the end of a transcript
that does not end with the assistant) the previously compacted context plus
the messages since go through ``process_request``; when the result is still
over the window, the simulated provider answers prompt-too-long and
``recover`` runs until it fits or gives up. After every request:

- the messages pass both providers' validity rules (no orphaned tool pair);
- the first user request survives verbatim (in the tail or a summary);
- ``effective`` implies the tokens went down;
- the request given to the Compactor was not mutated;
- history already sent is byte-identical, except where this request's events
  name the message or tool id that changed; spill and dedup stubs never change;
- the cheap stages, run again on their own output, change nothing.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.core.compactor import Compactor
from lab.core.config import CompactionConfig
from lab.core.events import Event, StageContext
from lab.core.messages import Message, ToolResultBlock, ToolUseBlock, Transcript, Usage, message_text
from lab.core.pipeline import CHEAP_STAGES, build_stages, decide, run_stage, view_for
from lab.core.presets import PRESETS, preset
from lab.core.summarizers.rules import user_texts
from lab.core.validate import anthropic_problems, openai_problems
from lab.errors import PromptTooLongError, StageError
from tests.builders import call_and_result, system, user
from tests.conftest import CORPUS_FILES, corpus_id

WINDOWS = (16_000, 32_000, 64_000, 200_000)
# Recover calls per request before the loop stops asking (recovery itself gives up sooner).
MAX_RECOVERIES = 6


def request_points(messages: list[Message]) -> list[int]:
    points = [i for i in range(1, len(messages)) if messages[i].role == "assistant" and messages[i - 1].role != "assistant"]
    if messages and messages[-1].role != "assistant":
        points.append(len(messages))
    return points


def sendable(messages: list[Message]) -> list[Message]:
    return [m for m in messages if m.tag != "boundary" and m.boundary is None]


def _fingerprint(messages: list[Message]) -> list[str]:
    return [m.model_dump_json() for m in messages]


def _ids_in(message: Message) -> set[str]:
    ids = {message.id}
    for b in message.content:
        if isinstance(b, ToolResultBlock):
            ids.add(b.tool_use_id)
        elif isinstance(b, ToolUseBlock):
            ids.add(b.id)
    return ids


@dataclass
class LoopReport:
    requests: int = 0
    recoveries: int = 0
    gave_up: int = 0
    over_window: int = 0
    orphaned_pairs: int = 0
    first_request_lost: int = 0
    violations: list[str] = field(default_factory=list)

    def fail(self, where: str, what: str) -> None:
        if len(self.violations) < 20:
            self.violations.append(f"{where}: {what}")


def _check_idempotent(compactor: Compactor, sent: list[Message], report: LoopReport, where: str) -> None:
    """Each cheap stage, on a copy of the session state, leaves the output alone."""
    ctx = StageContext(
        config=compactor.config, counter=compactor.counter, store=compactor.store, summarizer=compactor.summarizer,
        state=copy.deepcopy(compactor.state), now=compactor.state.last_request_time or 0.0,
    )
    for stage in build_stages(compactor.config, CHEAP_STAGES):
        again = run_stage(stage, sent, dataclasses.replace(ctx, state=copy.deepcopy(ctx.state))).messages
        if again != sent:
            report.fail(where, f"stage {stage.name} changed its own output")


def _recover_to_window(compactor: Compactor, sent: list[Message], report: LoopReport, where: str, deep: bool) -> tuple[list[Message], list[Event]]:
    """The simulated provider's prompt-too-long answers: ``recover`` until the request fits or recovery gives up."""
    window = compactor.config.window
    events: list[Event] = []
    for _ in range(MAX_RECOVERIES):
        if compactor.count_tokens(sent) <= window:
            break
        report.recoveries += 1
        was = _fingerprint(sent) if deep else None
        try:
            rescued = compactor.recover(sent, PromptTooLongError(f"prompt is too long: more than {window} tokens"))
        except StageError:
            report.gave_up += 1
            break
        if deep and _fingerprint(sent) != was:
            report.fail(where, "recover mutated its input")
        if rescued.effective and not rescued.tokens_after < rescued.tokens_before:
            report.fail(where, "effective recovery without fewer tokens")
        sent = rescued.messages
        events += rescued.events
    return sent, events


def _check_history(sent: list[Message], sent_before: dict[str, Message], stubs: dict[str, str], events: list[Event], report: LoopReport, where: str) -> None:
    """History already sent changes only where an event names it; spill and dedup stubs never change."""
    named = {i for e in events for i in e.ids}
    for m in sent:
        old = sent_before.get(m.id)
        if old is not None and old != m and not (_ids_in(m) & named):
            report.fail(where, f"message {m.id} changed without an event naming it")
        for b in m.content:
            if not isinstance(b, ToolResultBlock) or b.compacted not in ("spill", "dedup"):
                continue
            # The first stub seen for a tool id is the frozen one.
            if stubs.setdefault(b.tool_use_id, b.content) != b.content:
                report.fail(where, f"frozen {b.compacted} stub of {b.tool_use_id} changed")


def run_loop(transcript: Transcript, config: CompactionConfig, *, check_every: int = 1) -> LoopReport:
    messages = transcript.messages
    compactor = Compactor(config, tools=transcript.tools)
    window = config.window
    texts = user_texts(messages)
    first = texts[0].text if texts else None
    first_at = next((i for i, m in enumerate(messages) if texts and m.id == texts[0].id), None)
    report = LoopReport()
    context: list[Message] = []
    consumed = 0
    usage: Usage | None = None
    sent_before: dict[str, Message] = {}
    stubs: dict[str, str] = {}
    for n, point in enumerate(request_points(messages)):
        where = f"{config.label}@{window} request {n} (message {point})"
        request = context + messages[consumed:point]
        deep = n % check_every == 0
        before = _fingerprint(request) if deep else None
        outcome = compactor.process_request(request, usage=usage)
        if deep and _fingerprint(request) != before:
            report.fail(where, "process_request mutated its input")
        if outcome.effective and not outcome.tokens_after < outcome.tokens_before:
            report.fail(where, "effective without fewer tokens")
        sent, recovery_events = _recover_to_window(compactor, outcome.messages, report, where, deep)
        report.requests += 1
        if compactor.count_tokens(sent) > window:
            report.over_window += 1

        problems = anthropic_problems(sent) + openai_problems(sent)
        if problems:
            report.orphaned_pairs += sum(1 for p in problems if "tool" in p)
            report.fail(where, f"invalid request: {problems[:2]}")
        if first_at is not None and first_at < point and not any(first in message_text(m) for m in sendable(sent)):
            report.first_request_lost += 1
            report.fail(where, "first user request lost")

        _check_history(sent, sent_before, stubs, [*outcome.events, *recovery_events], report, where)
        if deep:
            _check_idempotent(compactor, sent, report, where)

        sent_before = {m.id: m for m in sent}
        context, consumed = sent, point
        # The simulated provider's usage for this request and its response.
        response = messages[point : point + 1]
        usage = Usage(input_tokens=compactor.count_tokens(sent), output_tokens=compactor.count_tokens(response))
    return report


def _config(name: str, window: int) -> CompactionConfig:
    return preset(name).model_copy(update={"window": window})


# -- generated sessions -------------------------------------------------------

def _generated(seed: int, requests: int, typical: int, huge: float, repeat: float, pause: float) -> Transcript:
    from lab.generator import GeneratorConfig, generate

    return generate(GeneratorConfig(
        seed=seed, requests=requests, typical_output_chars=typical, max_output_chars=max(typical, 40_000),
        huge_output_rate=huge, repeat_read_rate=repeat, long_pause_rate=pause, user_turns=min(3, requests - 1),
    ))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**16),
    requests=st.integers(3, 30),
    typical=st.sampled_from([300, 2_500, 9_000]),
    huge=st.sampled_from([0.0, 0.05, 0.2]),
    repeat=st.sampled_from([0.0, 0.5]),
    pause=st.sampled_from([0.0, 0.3]),
    name=st.sampled_from(list(PRESETS)),
    window=st.sampled_from(WINDOWS),
)
def test_invariants_on_generated_sessions(seed: int, requests: int, typical: int, huge: float, repeat: float, pause: float, name: str, window: int) -> None:
    report = run_loop(_generated(seed, requests, typical, huge, repeat, pause), _config(name, window))
    assert report.violations == []
    assert report.orphaned_pairs == 0 and report.first_request_lost == 0


# -- single stages on builder sessions -----------------------------------------

@st.composite
def builder_sessions(draw: st.DrawFn) -> list[Message]:
    msgs = [system(), user("Please refactor the error handling in app/")]
    for k in range(draw(st.integers(1, 12))):
        size = draw(st.sampled_from([10, 500, 5_000, 60_000]))
        path = draw(st.sampled_from(["app/a.py", "app/b.py", "README.md"]))
        tool = draw(st.sampled_from(["Read", "Bash", "Edit"]))
        at = 1_000_000.0 + k * draw(st.sampled_from([5, 4000]))
        msgs += call_and_result(tool, f"{path} line\n" * (size // 14 + 1), file_path=path, at=at)
        if draw(st.booleans()):
            msgs.append(user(f"note {k}", at=at + 1))
    return msgs


@settings(max_examples=30, deadline=None)
@given(msgs=builder_sessions(), name=st.sampled_from(list(PRESETS)), window=st.sampled_from([8_000, 32_000]))
def test_every_stage_is_pure_and_idempotent(msgs: list[Message], name: str, window: int) -> None:
    config = _config(name, window)
    compactor = Compactor(config)
    for stage in build_stages(config):
        base = StageContext(config=config, counter=compactor.counter, store=compactor.store, summarizer=compactor.summarizer,
                            state=compactor.state, now=1_000_000.0 + 100_000)
        snapshot = copy.deepcopy(msgs)
        first = run_stage(stage, msgs, dataclasses.replace(base, state=copy.deepcopy(base.state)))
        assert msgs == snapshot, f"{stage.name} mutated its input"
        # A decision only decides: the session state it was shown is left as it was.
        shown = dataclasses.replace(base, state=copy.deepcopy(base.state))
        before = copy.deepcopy(shown.state)
        decide(stage, view_for(msgs, shown), shown)
        assert shown.state == before and msgs == snapshot, f"{stage.name} changed what it was shown"
        if stage.name in ("watermark", "summary"):
            continue  # the gate changes nothing; a forced summary of a summary is a new summary by design
        state = copy.deepcopy(base.state)
        once = run_stage(stage, msgs, dataclasses.replace(base, state=state)).messages
        twice = run_stage(stage, once, dataclasses.replace(base, state=state)).messages
        assert twice == once, f"{stage.name} is not idempotent"
        assert first.messages == once, f"{stage.name} is not deterministic"


# -- the real corpus ----------------------------------------------------------

@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
def test_invariants_on_the_corpus(path: Path) -> None:
    from lab.formats import load

    transcript = load(path)
    failures: list[str] = []
    for name in PRESETS:
        for window in WINDOWS:
            # Mutation and idempotence are checked on every 4th request here, to keep the sweep quick.
            report = run_loop(transcript, _config(name, window), check_every=4)
            assert report.orphaned_pairs == 0, report.violations
            assert report.first_request_lost == 0, report.violations
            failures += report.violations
    assert failures == []
