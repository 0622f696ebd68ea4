"""Stage 1, active context: only what follows the last compaction boundary is processed.

A boundary is the ``role=system`` marker a compaction leaves behind (MiniCode's
``_compact_boundary: True``). Everything before the newest one was already
replaced by its summary, so later stages never look at it again. The leading
system messages (the system prompt) are kept whatever happens.

Each message is noted once (is it a boundary, does it extend the system
prompt) through ``view.note``; the Compactor keeps those notes, so a request costs only its
new messages.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from ..events import Event
from ..incremental import Memo
from ..messages import Message
from .base import StageConfig
from .contract import Decision, Drop, View

__all__ = ["ActiveContextConfig", "ActiveContextStage", "is_boundary", "system_prompt_length"]


class ActiveContextConfig(StageConfig):
    enabled: bool = Field(True, description="Process only the messages after the last compaction boundary.")


def is_boundary(message: Message) -> bool:
    return message.tag == "boundary" or (message.role == "system" and message.boundary is not None)


def system_prompt_length(messages: Sequence[Message]) -> int:
    """How many messages at the start are the system prompt: system messages up to the first boundary marker.

    Unlike ``tail.leading_system_messages``, a marker ends the count, since the active context starts there.
    """
    n = 0
    for m in messages:
        if m.role != "system" or is_boundary(m):
            break
        n += 1
    return n


class ActiveContextStage:
    name = "active"

    def __init__(self, config: ActiveContextConfig | None = None) -> None:
        self.config = config or ActiveContextConfig()

    def decide(self, view: View, config: ActiveContextConfig, state: None = None) -> Decision:
        if not config.enabled:
            return Decision()
        messages = view.messages
        memo = view.note(self._note)
        boundaries, head = memo.marked("boundaries"), memo.table("head").get("length", 0)
        cut = boundaries[-1] if boundaries else None
        if cut is None or cut <= head:
            return Decision()
        dropped = messages[head:cut]
        before = view.tokens()
        after = before - view.counter.count_messages(dropped)
        event = Event(
            stage=self.name,
            trigger=view.trigger,
            tokens_before=before,
            tokens_after=after,
            ids=tuple(m.id for m in dropped),
            strategy=None,
            detail=f"{len(dropped)} message(s) before the last compaction boundary are no longer processed",
        )
        return Decision((Drop(head, cut),), (event,))

    @staticmethod
    def _note(memo: Memo, i: int, m: Message) -> None:
        """Where the boundaries are, and how long the system prompt is (``head``: length, and whether it ended)."""
        boundary = is_boundary(m)
        if boundary:
            memo.marked("boundaries").append(i)
        head = memo.table("head")
        if not head.get("done"):
            if m.role == "system" and not boundary:
                memo.set(head, "length", i + 1)
            else:
                memo.set(head, "done", True)
