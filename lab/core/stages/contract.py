"""The stage contract: what a stage sees, what it may decide, and what it may ask for.

A stage is ``decide(view, config, state) -> Decision``. It reads the
``View`` (the messages, a token counter, the clock and what the Compactor
knows of the session), its own config and its own typed state, and returns
a ``Decision``: the changes it wants made to the history, the events that
report them, and its next state. It never edits a message, a list, its
state or a store; the Compactor applies the changes, keeps every stage's
state, and owns the incremental memory.

The changes::

    Stub(index, block, content, compacted)   a tool result's content replaced (spill, dedup, microcompact)
    ClearInput(index, block)                 a tool call's input emptied (microcompact's clear_tool_inputs)
    Drop(start, stop)                        messages[start:stop] leave the active context
    Rewrite(messages, boundary)              the whole history replaced (a summary, a truncation)

A stage that needs the outside world (a store write, a summarizer call, another
stage forced to run) is a generator: it yields a request (``Write``,
``Summarize``, ``Force``) and the Compactor sends back the answer, or throws
the error into it; the generator's return value is its ``Decision``. So the
stage's logic reads in one place while all I/O stays with the Compactor
(a sans-I/O stage).

Incremental memory: a stage that learns something per message calls
``view.note(*passes)``. Each pass is ``(memo, i, message) -> None`` and may
only write the memo's journalled tables and marks. The Compactor keeps the
memo per stage and trigger path, rolls it back to the settled prefix and runs
the passes over the rest only; a stage never sees where memos live, how they
are rolled back, or which prefix is settled.

Adding a stage: one module with a config sub-model (a ``StageConfig``), an
optional state dataclass, and a class with ``name``, ``config``, ``State`` and
``decide``; then one entry in ``lab.core.pipeline.STAGES`` and one field in
``CompactionConfig``. A stage of the caller's own runs without either, through
``Compactor(extra_stages=[...])``, as ``tests/core/stages/test_toy_stage.py``
shows in a few lines.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from ..events import Event, Trigger
from ..incremental import Memo, Note, remember
from ..messages import Boundary, Message, ToolSpec, Usage

if TYPE_CHECKING:  # pragma: no cover
    from ..summarizers.base import SummaryRequest
    from ..tokens.base import TokenCounter

# No result is claimed yet: a read-only empty mapping, shared by every default view.
_NO_CLAIMS: Mapping[str, str] = MappingProxyType({})

__all__ = [
    "View",
    "Stub",
    "ClearInput",
    "Drop",
    "Rewrite",
    "Change",
    "Decision",
    "Write",
    "Summarize",
    "Force",
    "Request",
    "Decides",
    "Stage",
    "merge_state",
]


class View(NamedTuple):
    """What a stage may read: the history and what the Compactor knows of the session. Never written.

    A tuple, not a frozen dataclass: the Compactor builds one per stage per
    request, and a tuple is built several times faster.
    """

    messages: Sequence[Message]
    counter: TokenCounter
    # Seconds since the epoch, from message timestamps or a simulated clock.
    now: float = 0.0
    trigger: Trigger = "auto"
    window: int = 200_000
    # True on the manual and recovery paths: the caller already decided that compaction runs.
    force: bool = False
    instructions: str | None = None
    tools: tuple[ToolSpec, ...] = ()
    # The summarizer's name ("rules" for the offline one), for the strategy a summary reports.
    summarizer: str = "rules"
    # The Compactor's own memory of the session.
    last_request_time: float | None = None
    anchor: Usage | None = None
    anchor_messages: int = 0
    first_request: str | None = None
    # tool_use_id -> the stage that froze a stub for that result (spill, dedup): a result is frozen by one stage only.
    claims: Mapping[str, str] = _NO_CLAIMS
    # The Compactor's incremental hooks (see ``note`` and ``tokens``); the defaults note everything afresh.
    noter: Callable[..., Memo] | None = None
    settled: int = 0
    totals: Sequence[int] = ()

    def note(self, *passes: Note) -> Memo:
        """This stage's memo, brought up to date with ``messages`` by ``passes`` (see the module docstring)."""
        if self.noter is not None:
            return self.noter(*passes)
        # No Compactor behind this view: a fresh memo notes everything, and nothing is kept.
        return remember(None, "", None, self.messages, 0, passes)

    def tokens(self, messages: Sequence[Message] | None = None, start: int = 0) -> int:
        """Tokens of ``messages[start:]`` (by default the view's), without recounting the settled prefix.

        ``messages`` must start with the view's settled prefix (a copy of the view's list, say).
        """
        msgs = self.messages if messages is None else messages
        k = self.settled
        if 0 < k < len(self.totals) and start <= k <= len(msgs):
            return self.totals[k] - self.totals[start] + self.counter.count_messages(msgs[k:])
        return self.counter.count_messages(msgs[start:] if start else msgs)


# -- the changes --------------------------------------------------------------


@dataclass(frozen=True)
class Stub:
    """Replace the content of the tool result ``messages[index].content[block]``.

    ``compacted`` names why ("spill", "dedup", "cleared", "masked"); the original
    length is kept. ``claim``: the stub is frozen for this tool_use_id, so no
    other stage may decide that result again (``View.claims``).
    """

    index: int
    block: int
    content: str
    compacted: str
    spill_path: str | None = None
    claim: bool = False


@dataclass(frozen=True)
class ClearInput:
    """Empty the input of the tool call ``messages[index].content[block]``."""

    index: int
    block: int


@dataclass(frozen=True)
class Drop:
    """``messages[start:stop]`` leave the active context."""

    start: int
    stop: int


@dataclass(frozen=True)
class Rewrite:
    """The whole history replaced by ``messages`` (a summary or a truncation), leaving ``boundary``."""

    messages: tuple[Message, ...]
    boundary: Boundary | None = None


Change = Stub | ClearInput | Drop | Rewrite


class Decision(NamedTuple):
    """What a stage decided: changes to apply, events to report, and its next state.

    ``state`` is None (no change) or a value of the stage's ``State`` whose
    dict and set fields are *added* to the kept state and whose other fields
    replace it (``merge_state``): a ledger that grows with the session is
    never copied. ``revisit``: positions the stage must look at again next time
    (a spill whose write failed), kept with its memo. ``gate``: a gate's answer;
    when it says no, the stages after it do not run. ``failure``: the stage gives
    up; the Compactor keeps its state, then raises this. ``forget_anchor``: the
    provider's usage no longer describes the history (MewCode's emergency path).
    """

    changes: tuple[Change, ...] = ()
    events: tuple[Event, ...] = ()
    state: Any = None
    revisit: tuple[int, ...] | None = None
    gate: Any = None
    failure: Exception | None = None
    forget_anchor: bool = False


# -- what a stage may ask the Compactor to do ---------------------------------


@dataclass(frozen=True)
class Write:
    """Store ``content`` in the session's spill store; the answer is the path it can be read back from."""

    tool_use_id: str
    content: str
    header: dict[str, Any]


@dataclass(frozen=True)
class Summarize:
    """Ask the session's summarizer for a summary; ``seed``: the rule summarizer's seed format. The answer is a ``SummaryResult``."""

    request: SummaryRequest
    seed: bool = False


@dataclass(frozen=True)
class Force:
    """Run the stage ``stage`` unconditionally on ``messages``; the answer is ``(messages, events, boundary)``.

    ``session_memory`` overrides the summary's own setting (None: leave it).
    """

    stage: str
    messages: tuple[Message, ...]
    trigger: Trigger
    session_memory: bool | None = None


Request = Write | Summarize | Force
Decides = Decision | Generator[Request, Any, Decision]


class Stage(Protocol):
    name: str
    config: Any

    def decide(self, view: View, config: Any, state: Any) -> Decides: ...


def merge_state(kept: Any, update: Any) -> Any:
    """``kept`` with ``update`` applied (see ``Decision.state``); a dataclass is updated in place and returned."""
    if update is None:
        return kept
    if kept is None or not dataclasses.is_dataclass(kept):
        return update
    for f in dataclasses.fields(update):
        value = getattr(update, f.name)
        current = getattr(kept, f.name)
        grows = isinstance(current, dict) and isinstance(value, Mapping) or isinstance(current, set) and isinstance(value, (set, frozenset))
        if grows:
            current.update(value)
        else:
            setattr(kept, f.name, value)
    return kept
