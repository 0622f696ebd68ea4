"""The fields of a Claude Code entry the importer reads, as the Struct its lines are decoded into.

Why a Struct: a Claude Code line carries many keys no message is made from
(``sessionId`` after the first, ``version``, ``gitBranch``, ``userType``,
``requestId``, ``mcpMeta``, and ``toolUseResult``, which repeats a tool's whole
output beside the ``tool_result`` block in real sessions: up to half a file's
bytes). Decoded into ``Entry`` (``jsonio.iter_jsonl_as``), msgspec skips those in
C instead of building Python values that are dropped unread.

Every field is ``Any`` (a missing key reads as ``None``, as ``dict.get`` gave),
so each value is checked where the importer reads it, exactly as for a dict;
``toolUseResult`` keeps only its ``agentId`` (``UNSET`` when the object has
none), and only when it is an object; ``attachment`` only the fields a queued
message is read from. A record that reaches the importer as a
dict (a line the Struct could not take, the array form, ``read_entries``) is
made into the same ``Entry`` by ``entry_of``, so one code path reads both.

Content blocks: a message's ``content`` list decodes into the tagged union
``Part`` (``type`` picks ``TextPart``, ``ThinkingPart``, ``ToolUsePart`` or
``ToolResultPart``), each holding only the fields a block is made from, typed
as the block needs them (``text`` a string, ``input`` an object...). So msgspec
checks the common blocks in C and the importer builds each block model from
its Part with no per-key walking. A list holding anything else (another block
kind, a field of another type, a stray string) does not fit: the line goes the
dict way and ``entry_of`` leaves that content as the raw list, which the
importer reads with the general code (``claude_code_content``,
``anthropic_blocks.block_dicts``) that knows every shape. ``usage`` decodes into
``UsageCounts``, the fields of a ``Usage`` (the nested objects real sessions add
are skipped unbuilt); one whose counts are not plain ints goes the same way,
and stays the dict ``usage_fields`` reads.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import msgspec

__all__ = [
    "ApiMessage",
    "Attachment",
    "Entry",
    "Part",
    "PARTS",
    "TextPart",
    "ThinkingPart",
    "ToolResultPart",
    "ToolUsePart",
    "ToolUseResult",
    "UNSET",
    "UsageCounts",
    "entry_of",
]

UNSET = msgspec.UNSET


class ToolUseResult(msgspec.Struct, gc=False):
    """An object ``toolUseResult``: the subagent a Task/Agent call ran in, when it names one."""

    agentId: Any = UNSET


class Attachment(msgspec.Struct, gc=False):
    """An object ``attachment``: what Claude Code 2.x adds to the next request, as far as it is read.

    Only a ``queued_command`` makes a message (``prompt``: text, or blocks when an image came with
    it); the other kinds (file contents, reminders, listings) are skipped unbuilt, which is most of
    an attachment's bytes.
    """

    type: Any = None
    prompt: Any = None
    commandMode: Any = None
    origin: Any = None


# kw_only: the kinds add required fields after this optional one.
class _Part(msgspec.Struct, tag_field="type", kw_only=True, gc=False):
    # A ``text`` key any block may carry: the text a sidechain's prompt is recognised by (``parts_text``
    # reads every part's string ``text``), so it is kept even beside another kind's fields.
    text: Any = UNSET


class TextPart(_Part, tag="text"):
    text: str


class ThinkingPart(_Part, tag="thinking"):
    thinking: str
    signature: str | None = None


class ToolUsePart(_Part, tag="tool_use"):
    id: str
    name: str
    input: dict[str, Any]


class ToolResultPart(_Part, tag="tool_result"):
    tool_use_id: str
    # Text, or a list of parts (``claude_code_content.result_text`` reads every shape).
    content: Any = None
    # Only ``true`` makes an error result.
    is_error: Any = None


Part = TextPart | ThinkingPart | ToolUsePart | ToolResultPart
PARTS = frozenset({TextPart, ThinkingPart, ToolUsePart, ToolResultPart})


# A token count as the API writes it: anything else (null, a float, a negative number) does not fit.
_Count = Annotated[int, msgspec.Meta(ge=0)]
# A recorded cost as ``anthropic_blocks.cost_usd`` keeps it: a finite non-negative number.
_Cost = Annotated[float, msgspec.Meta(ge=0, le=sys.float_info.max)]


class UsageCounts(msgspec.Struct, gc=False):
    """An object ``usage`` of plain counts: a ``Usage``'s fields, in its order, under the API's names.

    So ``msgspec.structs.asdict`` gives the model's fields, as ``anthropic_blocks.usage_fields``
    makes them of the same object (a missing count is 0, as there). A usage holding anything else
    does not fit: it stays the dict it is (``entry_of``), which ``usage_fields`` reads.
    """

    input_tokens: _Count = 0
    output_tokens: _Count = 0
    cache_read_tokens: _Count = msgspec.field(default=0, name="cache_read_input_tokens")
    cache_write_tokens: _Count = msgspec.field(default=0, name="cache_creation_input_tokens")
    # Claude Code's recorded cost: a usage's own ``costUSD``, or the entry's, set here by the importer.
    cost_usd: _Cost | None = msgspec.field(default=None, name="costUSD")


class ApiMessage(msgspec.Struct, gc=False):
    """An object ``message``: the API message a user or assistant entry wraps, as far as it is read."""

    id: Any = None
    model: Any = None
    # Decoded: a string, a list of Parts or null (any other value sends the line the dict way).
    # From ``entry_of``: a list that is no list of Parts stays as it was, for the general reader.
    content: str | list[Part] | None = None
    # A non-object value counts nothing, so nothing of it is read. From ``entry_of``: an object that
    # is no ``UsageCounts`` stays a dict.
    usage: UsageCounts | str | list[Any] | bool | int | float | None = None


# gc=False: an entry holds parsed JSON values only, never itself, so it can be in no cycle; and an
# import runs with the collector paused anyway.
class Entry(msgspec.Struct, gc=False):
    """One Claude Code record, as far as the importer reads it."""

    type: Any = None
    uuid: Any = None
    parentUuid: Any = None
    # A compaction's link back over its null ``parentUuid``.
    logicalParentUuid: Any = None
    isSidechain: Any = None
    agentId: Any = None
    sessionId: Any = None
    cwd: Any = None
    timestamp: Any = None
    # A non-object value makes no message (skipped and counted), so nothing of it is read.
    message: ApiMessage | str | list[Any] | bool | int | float | None = None
    isApiErrorMessage: Any = None
    costUSD: Any = None
    isCompactSummary: Any = None
    isMeta: Any = None
    # A non-object value (text, a list of blocks) is read for nothing: only an object's agentId is.
    toolUseResult: ToolUseResult | str | list[Any] | bool | int | float | None = None
    # attachment entries: a non-object value is read for nothing.
    attachment: Attachment | str | list[Any] | bool | int | float | None = None
    # system entries
    subtype: Any = None
    compactMetadata: Any = None
    content: Any = None
    # content-replacement records: the previews Claude Code sent in place of large tool results.
    replacements: Any = None
    # title records
    customTitle: Any = None
    aiTitle: Any = None
    summary: Any = None


_FIELDS = frozenset(Entry.__struct_fields__)


def _usage_of(usage: Any) -> Any:
    """A usage object as the ``UsageCounts`` it decodes to, or the dict when it does not fit."""
    if type(usage) is not dict:
        return usage
    try:
        return msgspec.convert(usage, UsageCounts)
    except msgspec.ValidationError:
        return usage


def _content_of(content: Any) -> Any:
    """A raw content list as the Parts it decodes to, or the raw value when it is no list of Parts."""
    if type(content) is not list:
        return content
    try:
        return msgspec.convert(content, list[Part])
    except msgspec.ValidationError:
        return content


def entry_of(record: dict[str, Any]) -> Entry:
    """The ``Entry`` a dict record decodes to: its known keys, its objects as their Structs where they fit.

    A ``message`` object becomes an ``ApiMessage`` (its content as Parts and its ``usage`` as
    ``UsageCounts`` when they fit, see the module doc), an object ``toolUseResult`` a ``ToolUseResult``.
    """
    fields = {k: v for k, v in record.items() if k in _FIELDS}
    message = fields.get("message")
    if isinstance(message, dict):
        fields["message"] = ApiMessage(
            id=message.get("id"), model=message.get("model"), content=_content_of(message.get("content")), usage=_usage_of(message.get("usage"))
        )
    result = fields.get("toolUseResult")
    if type(result) is dict:
        fields["toolUseResult"] = ToolUseResult(agentId=result.get("agentId", UNSET))
    attachment = fields.get("attachment")
    if type(attachment) is dict:
        fields["attachment"] = Attachment(
            type=attachment.get("type"), prompt=attachment.get("prompt"), commandMode=attachment.get("commandMode"), origin=attachment.get("origin")
        )
    return Entry(**fields)
