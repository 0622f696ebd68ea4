"""Cline's and Roo Code's XML tool calls, made tool calls.

Without native tool calling, Cline asks the model to write one tool call per
message as XML in its text (``<read_file>\\n<path>src/a.py</path>\\n</read_file>``)
and answers in the next user message with a text block
``[read_file for 'src/a.py'] Result:`` followed by the result's blocks
(then, usually, an ``<environment_details>`` block). Kept as text, no stage
could act on them: spill, dedup and microcompact see no tool results.

``xml_tool_calls`` turns each such pair into a ``tool_use`` block (the XML's
child tags as its input: ``path``, ``command``, ``content``...) and a
``tool_result`` block first in the answering message, holding the result's
text. A pair is converted only when both halves are there: the header names
the tool and the assistant's text holds that tool's XML, so ordinary prose
that mentions a tag is left alone, and so is a call the log never answered.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..core.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock

__all__ = ["xml_tool_calls"]

# "[read_file for 'src/a.py'] Result:", "[attempt_completion] Result:", "[search_files for 'x' in '*.py'] Result:".
_HEADER = re.compile(r"^\[(?P<name>[a-z][a-z0-9_]*)(?: for [^\n]*)?\] Result:\s*", re.S)
_CHILD = re.compile(r"<(?P<tag>[a-z][a-z0-9_]*)>")
# A file's whole content or a diff can itself hold anything, closing tags included: read to its last close.
_LONG_PARAMS = frozenset({"content", "diff", "result"})
_FAILED = ("The tool execution failed", "The user denied this operation", "Error")


def _params(body: str) -> dict[str, str]:
    """The child tags of one tool call's XML body, as its input."""
    out: dict[str, str] = {}
    at = 0
    while (m := _CHILD.search(body, at)) is not None:
        tag = m["tag"]
        close = f"</{tag}>"
        end = body.rfind(close) if tag in _LONG_PARAMS else body.find(close, m.end())
        if end < 0:
            break
        out[tag] = body[m.end() : end].strip()  # as Cline trims every parameter
        at = end + len(close)
    return out


def _split_call(message: Message, name: str) -> tuple[list[TextBlock], dict[str, str]] | None:
    """(the message's text without the call, the call's input) when its text holds ``name``'s XML."""
    opening, closing = f"<{name}>", f"</{name}>"
    for i, b in enumerate(message.content):
        if isinstance(b, TextBlock) and opening in b.text:
            start = b.text.find(opening)
            end = b.text.rfind(closing)
            if end < start:
                return None
            prose = (b.text[:start] + b.text[end + len(closing) :]).strip()
            rest = [x for j, x in enumerate(message.content) if j != i]
            if any(not isinstance(x, TextBlock) for x in rest):
                return None  # a native tool call beside it: not Cline's XML protocol
            texts = [x for x in rest if isinstance(x, TextBlock)]
            kept = ([TextBlock(text=prose)] if prose else []) + texts
            return kept, _params(b.text[start + len(opening) : end])
    return None


def _result(message: Message) -> tuple[str, str, list[TextBlock]] | None:
    """(tool name, result text, the blocks after the result) when the message answers an XML tool call."""
    blocks = message.content
    if not blocks or not isinstance(blocks[0], TextBlock):
        return None
    head = _HEADER.match(blocks[0].text)
    if head is None:
        return None
    parts = [blocks[0].text[head.end() :]] if blocks[0].text[head.end() :].strip() else []
    k = 1
    # The result's own blocks run up to the environment details Cline appends (or the end).
    while k < len(blocks):
        b = blocks[k]
        if not isinstance(b, TextBlock) or b.text.lstrip().startswith("<environment_details>"):
            break
        parts.append(b.text)
        k += 1
    if any(not isinstance(b, TextBlock) for b in blocks[k:]):
        return None
    return head["name"], "\n".join(parts), [b for b in blocks[k:] if isinstance(b, TextBlock)]


def xml_tool_calls(messages: Sequence[Message]) -> list[Message]:
    """``messages`` with every complete XML tool call and its answer as a tool_use / tool_result pair."""
    out = list(messages)
    for k in range(1, len(out)):
        answer, call = out[k], out[k - 1]
        if answer.role != "user" or call.role != "assistant":
            continue
        found = _result(answer)
        if found is None:
            continue
        name, text, after = found
        split = _split_call(call, name)
        if split is None:
            continue
        prose, params = split
        tool_id = f"cline-{call.id or k - 1}"
        out[k - 1] = call.model_copy(update={"content": (*prose, ToolUseBlock(id=tool_id, name=name, input=params))})
        failed = text.lstrip().startswith(_FAILED)
        out[k] = answer.model_copy(update={"content": (ToolResultBlock(tool_use_id=tool_id, content=text, is_error=failed), *after)})
    return out
