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
none), and only when it is an object. A record that reaches the importer as a
dict (a line the Struct could not take, the array form, ``read_entries``) is
made into the same ``Entry`` by ``entry_of``, so one code path reads both.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["ApiMessage", "Entry", "ToolUseResult", "UNSET", "entry_of"]

UNSET = msgspec.UNSET


class ToolUseResult(msgspec.Struct, gc=False):
    """An object ``toolUseResult``: the subagent a Task/Agent call ran in, when it names one."""

    agentId: Any = UNSET


class ApiMessage(msgspec.Struct, gc=False):
    """An object ``message``: the API message a user or assistant entry wraps, as far as it is read."""

    id: Any = None
    model: Any = None
    content: Any = None
    usage: Any = None


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
    # system entries
    subtype: Any = None
    compactMetadata: Any = None
    content: Any = None
    # title records
    customTitle: Any = None
    aiTitle: Any = None
    summary: Any = None


_FIELDS = frozenset(Entry.__struct_fields__)


def entry_of(record: dict[str, Any]) -> Entry:
    """The ``Entry`` a dict record decodes to: its known keys, ``toolUseResult`` as ``ToolUseResult`` when an object."""
    fields = {k: v for k, v in record.items() if k in _FIELDS}
    message = fields.get("message")
    if isinstance(message, dict):
        fields["message"] = ApiMessage(id=message.get("id"), model=message.get("model"), content=message.get("content"), usage=message.get("usage"))
    result = fields.get("toolUseResult")
    if type(result) is dict:
        fields["toolUseResult"] = ToolUseResult(agentId=result.get("agentId", UNSET))
    return Entry(**fields)
