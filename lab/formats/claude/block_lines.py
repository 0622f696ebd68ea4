"""Flat block-per-line exports: one content block per JSONL record, ``content`` an object.

Some tools export a Claude Code session (or any Messages API conversation)
flat, one block a line::

    {"timestamp": "...", "role": "assistant", "content": {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {...}}}
    {"timestamp": "...", "role": "tool", "content": {"type": "tool_result", "tool_use_id": "toolu_1", "content": "..."}}

The message is gone from such a file: only its blocks are left, and the
Messages API (like every replay) needs them back in messages. The importer
joins them the way Claude Code sent them (``message_lines.merge_turns``):

- consecutive blocks of one role are one message (the thinking, text and
  tool calls of one assistant turn);
- role ``tool`` is the user turn that carries tool results (the API has no
  tool role); a ``text`` block under it with a ``tool_use_id`` on the record
  is a tool result too;
- the tool results of a turn come first in their user message, in the order
  of the calls they answer.

Records with a ``content`` list or string are read too (an export may mix
them). A record without a role or content is skipped and counted as
``record:<type>``; a block the reader does not know is counted as
``block:<type>`` (``anthropic_blocks``). A last line cut off mid-write is a
warning, as for every log.

Detection: 96 when most probed records with a role hold their ``content``
as one block object of a known type, or when every record of role ``tool``
holds a list of Anthropic blocks (a shape neither API writes): above the
message-line formats (Chat claims a ``tool`` role with 90), and no other
format writes a block object as a record's content. Anything else: 0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...core.messages import ImportNotes, Message, Transcript, TranscriptMeta
from ...errors import TranscriptError
from ..history_builder import parse_timestamp
from ..anthropic_blocks import block_dicts, usage_fields
from ..jsonio import gc_paused, iter_log_lines
from ..message_lines import joined_note, merge_turns, record_kind
from ..registry import FileHead, Format, REQUEST_BODIES

__all__ = ["FORMAT", "BLOCK_TYPES", "read", "sniff"]

# The block types of such exports (and of the Messages API) that make a record of this format.
BLOCK_TYPES = frozenset({"text", "thinking", "redacted_thinking", "tool_use", "tool_result", "image", "server_tool_use"})
_ROLES = {"user": "user", "tool": "user", "assistant": "assistant", "system": "system"}
_STAMP_KEYS = ("timestamp", "created_at", "ts")


def _is_block(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") in BLOCK_TYPES


def _is_block_record(record: Any) -> bool:
    """A record of this format: one block object as its content, or Anthropic blocks under the role ``tool``.

    The second shape is the flat export with its blocks in a list: the Messages API has no
    ``tool`` role and Chat no content blocks, so neither message-line reader takes it.
    """
    if not isinstance(record, dict) or not isinstance(record.get("role"), str):
        return False
    content = record.get("content")
    if _is_block(content):
        return True
    return record["role"] == "tool" and isinstance(content, list) and bool(content) and all(_is_block(b) for b in content)


def _content(record: dict[str, Any]) -> Any:
    """The record's content as Anthropic content: a block object becomes a list of one."""
    content = record.get("content")
    if isinstance(content, dict):
        if record.get("role") == "tool" and content.get("type") == "text" and isinstance(record.get("tool_use_id"), str):
            # A tool's output written as text, the call it answers named on the record.
            return [{"type": "tool_result", "tool_use_id": record["tool_use_id"], "content": content.get("text")}]
        return [content]
    return content


def _stamp(record: dict[str, Any]) -> Any:
    for key in _STAMP_KEYS:
        value = record.get(key)
        if value is not None and value != "":
            return parse_timestamp(value)
    return None


def read(path: Path) -> Transcript:
    """Import a flat block-per-line export: blocks joined into messages (see the module docstring)."""
    path = Path(path)
    file = str(path)
    notes = ImportNotes()
    pieces: list[tuple[Message, str | None]] = []
    model: str | None = None
    with gc_paused():
        for line_no, record in iter_log_lines(path, notes):
            role = record.get("role") if isinstance(record, dict) else None
            if not isinstance(role, str) or not isinstance(record, dict) or "content" not in record:
                notes.skip(f"record:{record_kind(record)}")
                continue
            mapped = _ROLES.get(role)
            if mapped is None:
                notes.skip(f"role:{role}")
                continue
            blocks = block_dicts(_content(record), notes, f"line {line_no}")
            if not blocks:
                notes.skip("empty_record")
                continue
            if model is None and isinstance(record.get("model"), str):
                model = record["model"]
            fields = {
                "role": mapped,
                "content": blocks,
                "id": f"m{len(pieces)}",
                "timestamp": _stamp(record),
                "usage": usage_fields(record.get("usage")),
            }
            # No key: the blocks of a turn carry no shared message id in such files, only their order.
            pieces.append((Message.model_validate(fields), None))
    if not pieces:
        raise TranscriptError("no content blocks found", file=file, expected="JSON lines holding {role, content: {type, ...}} blocks")
    messages, joined = merge_turns(pieces)
    if joined:
        notes.warnings.append(joined_note(joined, len(messages)))
    messages = [m if m.id == f"m{i}" else m.model_copy(update={"id": f"m{i}"}) for i, m in enumerate(messages)]
    meta = TranscriptMeta(source_format="block_lines", model=model, source_path=file)
    return Transcript(meta=meta, messages=messages, notes=notes)


def sniff(probe: FileHead) -> int:
    if probe.shape != "jsonl" or not probe.records:
        return 0
    with_role = [r for r in probe.records if isinstance(r, dict) and "role" in r]
    if not with_role:
        return 0
    objects = sum(1 for r in with_role if _is_block(r.get("content")))
    if objects * 2 > len(with_role):
        return 96
    # Blocks in lists: only the tool role's records tell this format from message lines.
    tools = [r for r in with_role if r.get("role") == "tool"]
    return 96 if tools and all(_is_block_record(r) for r in tools) else 0


FORMAT = Format(
    name="block_lines",
    description="Flat block-per-line JSONL exports ({timestamp, role: user|assistant|tool, content: {type, ...}}), blocks joined into messages",
    sniff=sniff,
    read=read,
    # More specific: one block object per record also reads as a message-per-line JSONL.
    more_specific_than=REQUEST_BODIES,
)
