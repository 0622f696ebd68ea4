"""Ask the model a probe with the compacted context at request k, as the agent would have sent it.

The request is the context the replay sent at ``k`` (``Report.context_at``),
exported with the lab's own exporters (``to_anthropic`` / ``to_openai``), and
one more user turn: a fixed preamble and the probe's question. The session's
tools stay declared, because both APIs refuse tool calls in the history of a
request without them, but ``tool_choice`` is "none": the answer is text, from
the context alone. A tool used in the history with no recorded spec gets a
minimal one (its name and an open schema) for the same reason.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Sequence

from ..core.messages import Message, TextBlock, ToolSpec, ToolUseBlock
from ..core.providers import ProviderSettings
from ..formats.export import to_anthropic, to_openai
from .build import Probe
from .call import Completion, complete

__all__ = ["PREAMBLE", "ANSWER_TOKENS", "question_message", "request_tools", "ask_body", "ask"]

PREAMBLE = (
    "[Probe] Pause the task and answer one question about this session, from the conversation above only. "
    "Do not call tools and do not guess: say so when the conversation does not tell you. Be specific and brief."
)
# The answer's output budget; the cost estimate counts it in full.
ANSWER_TOKENS = 1024


def question_message(probe: Probe) -> Message:
    return Message(role="user", content=(TextBlock(text=f"{PREAMBLE}\n\nQuestion: {probe.question}"),), id=f"probe-{probe.id}")


def request_tools(context: Sequence[Message], tools: Sequence[ToolSpec]) -> list[ToolSpec]:
    """The session's tool specs, plus a minimal one for each tool the context calls that has none."""
    specs = list(tools)
    known = {t.name for t in specs}
    for m in context:
        for b in m.content:
            if isinstance(b, ToolUseBlock) and b.name not in known:
                known.add(b.name)
                specs.append(ToolSpec(name=b.name, description="(recorded in the session; no spec was kept)", input_schema={"type": "object"}))
    return specs


def ask_body(context: Sequence[Message], probe: Probe, provider: str, tools: Sequence[ToolSpec] = ()) -> dict[str, Any]:
    """The request body (without model and output budget) asking ``probe`` after ``context``."""
    messages = [*context, question_message(probe)]
    specs = request_tools(context, tools)
    if provider == "anthropic":
        body = to_anthropic(messages, specs, close_pending=True)
        if specs:
            body["tool_choice"] = {"type": "none"}
    else:
        body = to_openai(messages, specs, close_pending=True)
        if specs:
            body["tool_choice"] = "none"
    return body


def ask(settings: ProviderSettings, context: Sequence[Message], probe: Probe, tools: Sequence[ToolSpec] = ()) -> Completion:
    """The model's answer to ``probe`` with ``context`` as its history (a ``ProviderError`` when the call fails)."""
    return complete(settings, ask_body(context, probe, settings.provider, tools), ANSWER_TOKENS)
