"""smolagents' tool roles in a chat history: ``tool-call`` and ``tool-response`` messages.

smolagents (Hugging Face) writes an agent's memory as chat messages
(``agent.write_memory_to_messages()``, ``ChatMessage.dict()``) with two roles
no provider has: a ``tool-call`` message, "Calling tools:" followed by the
Python repr of the calls (``[{'id': ..., 'type': 'function', 'function':
{'name': ..., 'arguments': ...}}]``), and a ``tool-response`` message,
"Observation:" or "Call id: ..." followed by the output. smolagents sends the
first as assistant text and the second as user text. Read as such, a history
would have no tool results and no compaction stage could act on the
observations that make up most of it, so, as ``text_commands`` does for
SWE-agent, they become what they are:

* ``tool-call``: a tool_use per call, joined to the assistant message before
  it (the reply that wrote the code); the calls are read with
  ``ast.literal_eval`` (values only, nothing is run); text that does not parse
  is one call named ``tool`` holding it.
* ``tool-response``: the result of the open calls: the first gets the text,
  any others a pointer to it (smolagents writes one observation for all of
  them); an ``Error:`` line marks it an error. With no open call it is the
  user's text, as smolagents sent it.
"""

from __future__ import annotations

import ast
import re
from datetime import datetime
from typing import Any

from ...core.messages import Block, TextBlock
from ..history_builder import HistoryBuilder, opt_str

__all__ = ["TOOL_CALL", "TOOL_RESPONSE", "add_tool_call", "add_tool_response"]

TOOL_CALL = "tool-call"
TOOL_RESPONSE = "tool-response"
_CALLING = re.compile(r"^\s*Calling tools:\s*", re.S)
_ERROR = re.compile(r"^Error:", re.M)
_SHARED = "[the output of this call is in the result above: smolagents wrote one observation for the calls of a step]"


def _calls(text: str) -> list[tuple[str | None, str, dict[str, Any]]]:
    """(id, name, input) of each call a ``tool-call`` text lists."""
    body = _CALLING.sub("", text, count=1)
    try:
        value = ast.literal_eval(body)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return [(None, "tool", {"text": body})]
    out: list[tuple[str | None, str, dict[str, Any]]] = []
    for call in value if isinstance(value, list) else [value]:
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not opt_str(fn.get("name")):
            return [(None, "tool", {"text": body})]
        args = fn.get("arguments")
        inputs = args if isinstance(args, dict) else {"code" if fn["name"] == "python_interpreter" else "arguments": args}
        out.append((opt_str(call.get("id")), fn["name"], inputs))
    return out or [(None, "tool", {"text": body})]


def add_tool_call(b: HistoryBuilder, text: str, key: str, stamp: datetime | None) -> None:
    """A ``tool-call`` message's text: its calls, on the assistant reply before it."""
    blocks: list[Block] = [b.use(call_id, name, inputs, key=f"{key}.{i}") for i, (call_id, name, inputs) in enumerate(_calls(text))]
    b.add("assistant", blocks, key=key, timestamp=stamp, merge=True)


def add_tool_response(b: HistoryBuilder, text: str, key: str, stamp: datetime | None) -> None:
    """A ``tool-response`` message's text: the result of the open calls, else the user's text."""
    open_calls = b.pending()
    if not open_calls:
        b.add("user", [TextBlock(text=text)] if text else [], key=key, timestamp=stamp)
        return
    failed = bool(_ERROR.search(text))
    for n, (call_id, _) in enumerate(open_calls):
        b.result(call_id, text if n == 0 else _SHARED, key=f"{key}.{n}", is_error=failed, timestamp=stamp, canonical=True)
