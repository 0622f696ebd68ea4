"""Adding a stage takes a config sub-model and a ``decide``: here a toy one, run by the Compactor like the others.

The toy truncates long error results. It never touches a message, a store or
the session state: it returns changes, an event and its next state, and the
Compactor applies them, keeps the state, and makes it incremental.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from pydantic import Field

from lab.core.compactor import Compactor
from lab.core.config import CompactionConfig
from lab.core.events import Event
from lab.core.messages import ToolResultBlock
from lab.core.stages.base import StageConfig
from lab.core.stages.contract import Decision, Stub, View
from tests.builders import call_and_result, system, user


# -- the whole stage ----------------------------------------------------------------------


class ShortErrorsConfig(StageConfig):
    max_chars: int = Field(50, ge=10, description="Error results longer than this keep only their first characters.")


@dataclass
class ShortErrorsState:
    cut: int = 0  # how many results the stage has cut in this session


class ShortErrorsStage:
    name = "short_errors"
    State = ShortErrorsState

    def __init__(self, config: ShortErrorsConfig | None = None) -> None:
        self.config = config or ShortErrorsConfig()

    def decide(self, view: View, config: ShortErrorsConfig, state: ShortErrorsState) -> Decision:
        changes = tuple(
            Stub(i, j, b.content[: config.max_chars], "truncated")
            for i, m in enumerate(view.messages)
            for j, b in enumerate(m.content)
            if isinstance(b, ToolResultBlock) and b.is_error and b.compacted is None and len(b.content) > config.max_chars
        )
        if not changes:
            return Decision()
        tokens = view.tokens()
        event = Event(self.name, view.trigger, tokens, tokens, detail=f"cut {len(changes)} error result(s)")
        return Decision(changes, (event,), ShortErrorsState(state.cut + len(changes)))


# -- it runs ---------------------------------------------------------------------------------


def history() -> list:
    return [system(), user("go"), *call_and_result("Bash", "Traceback:\n" + "x" * 500, tool_id="e1", is_error=True, command="make")]


def test_the_compactor_runs_a_toy_stage_and_keeps_its_state() -> None:
    compactor = Compactor(CompactionConfig(), extra_stages=[ShortErrorsStage()])
    msgs = history()
    snapshot = copy.deepcopy(msgs)
    out = compactor.process_request(msgs)
    result = next(b for m in out.messages for b in m.content if isinstance(b, ToolResultBlock))
    assert result.content == ("Traceback:\n" + "x" * 500)[:50] and result.compacted == "truncated"
    assert [e.stage for e in out.events] == ["short_errors"]
    assert compactor.state.stages["short_errors"] == ShortErrorsState(cut=1)
    assert msgs == snapshot  # the request is never edited


def test_the_toy_stage_is_idempotent_and_incremental() -> None:
    fast = Compactor(CompactionConfig(), extra_stages=[ShortErrorsStage()])
    slow = Compactor(CompactionConfig(), extra_stages=[ShortErrorsStage()], incremental=False)
    msgs = history()
    once = fast.process_request(msgs)
    assert once == slow.process_request(msgs)
    again = fast.process_request(once.messages)
    assert again.messages == once.messages and again.events == ()
    assert fast.state.stages == slow.state.stages
