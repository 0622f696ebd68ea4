"""Cline and Roo Code task folders (``tasks/<id>/``).

A task folder holds up to three files:

* ``api_conversation_history.json``: the messages sent to the model, a bare
  list of Anthropic Messages-API messages (read by the ``anthropic`` importer;
  tool calls written as XML in the text become tool calls, ``xml_tool_calls``);
* ``ui_messages.json``: what the chat panel showed (``cline_ui``), including
  one ``api_req_started`` record per model request with its tokens and cost;
* ``task_metadata.json``: files in context and the models used; only the
  last model id is read from it.

``load(folder)`` and ``read_folder`` take the messages from the API history
when it is there, since that is what the model was sent, and give its
assistant messages, in order, the usage of the ``api_req_started`` records
that reported tokens, in order (a warning says so when the two counts
differ). Without the history the conversation is rebuilt from
``ui_messages.json`` alone. A ``ui_messages.json`` loaded as a file is read the
same way: with its folder's history when one sits beside it, on its own
otherwise.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ...core.messages import ImportNotes, Transcript, TranscriptMeta
from ...errors import TranscriptError
from ..claude.anthropic import request_to_transcript
from ..xml_tool_calls import xml_tool_calls
from .cline_ui import RequestUsage, convert_ui, request_usage
from ..jsonio import read_json
from ..registry import Format, FileHead

__all__ = ["FORMAT", "is_task_folder", "NAME", "UI_MESSAGES", "API_HISTORY", "TASK_METADATA", "task_files", "read", "read_folder", "read_ui", "sniff"]

NAME = "cline"
UI_MESSAGES = "ui_messages.json"
API_HISTORY = "api_conversation_history.json"
TASK_METADATA = "task_metadata.json"


def task_files(folder: Path) -> bool:
    """Whether ``folder`` is a Cline / Roo Code task folder (it holds either conversation file)."""
    return folder.is_dir() and any((folder / name).is_file() for name in (UI_MESSAGES, API_HISTORY))


def _records(path: Path) -> list[Any]:
    doc = read_json(path)
    if not isinstance(doc, list):
        raise TranscriptError(f"top level is {type(doc).__name__}, not a list", file=str(path), where="$", expected="a ui_messages.json list of {ts, type, say|ask} records")
    if doc and not any(_is_ui_record(r) for r in doc[:50]):
        raise TranscriptError("no say/ask records", file=str(path), where="$[0]", expected="a ui_messages.json list of {ts, type, say|ask} records")
    return doc


def _model(folder: Path, notes: ImportNotes) -> str | None:
    path = folder / TASK_METADATA
    if not path.is_file():
        return None
    try:
        doc = read_json(path)
    except TranscriptError:
        notes.warnings.append(f"{TASK_METADATA} is not JSON; ignored")
        return None
    used = doc.get("model_usage") if isinstance(doc, dict) else None
    if isinstance(used, list) and used and isinstance(used[-1], dict) and isinstance(used[-1].get("model_id"), str):
        return str(used[-1]["model_id"])
    return None


def read_ui(path: Path) -> Transcript:
    """Rebuild the conversation from ``ui_messages.json`` alone."""
    path = Path(path)
    records = _records(path)
    notes = ImportNotes(records_read=len(records))
    conv = convert_ui(records, notes)
    if not conv.messages:
        raise TranscriptError("no conversation in the records", file=str(path), expected="say text / tool / command records")
    meta = TranscriptMeta(source_format=NAME, source_path=str(path), session_id=path.parent.name or None, model=_model(path.parent, notes))
    return Transcript(meta=meta, messages=conv.messages, notes=notes)


def _usage_list(ui: Path, notes: ImportNotes) -> list[RequestUsage]:
    records = _records(ui)
    usages = []
    for rec in records:
        if _is_ui_record(rec) and rec.get("say") == "api_req_started":
            text = rec.get("text")
            try:
                info = json.loads(text) if isinstance(text, str) else None
            except ValueError:
                notes.skip("api_req_started:invalid")
                continue
            usages.append(request_usage(info))
    return [u for u in usages if u.usage is not None]


def read_folder(folder: Path) -> Transcript:
    """A task folder: messages from the API history (or the UI records), usage from the UI records."""
    folder = Path(folder)
    ui, history = folder / UI_MESSAGES, folder / API_HISTORY
    if not history.is_file():
        if not ui.is_file():
            raise TranscriptError("a folder with neither task file", file=str(folder), expected=f"a Cline / Roo Code task folder ({UI_MESSAGES}, {API_HISTORY})")
        return read_ui(ui)
    doc = read_json(history)
    if not isinstance(doc, list):
        raise TranscriptError(f"top level is {type(doc).__name__}, not a list", file=str(history), where="$", expected="a list of Messages-API messages")
    notes = ImportNotes(records_read=len(doc))
    t = request_to_transcript({"messages": doc}, file=str(history), notes=notes)
    messages = xml_tool_calls(t.messages)
    if ui.is_file():
        usages = _usage_list(ui, notes)
        replies = [i for i, m in enumerate(messages) if m.role == "assistant"]
        if usages and len(usages) != len(replies):
            notes.warnings.append(
                f"{UI_MESSAGES} reports tokens for {len(usages)} requests and the history holds {len(replies)} replies; "
                "usage was matched in order and the rest left without"
            )
        # Unequal lengths are expected here (warned above): pair in order, leave the rest without usage.
        for i, u in zip(replies, usages, strict=False):
            messages[i] = messages[i].model_copy(update={"usage": u.usage})
    meta = TranscriptMeta(source_format=NAME, source_path=str(folder), session_id=folder.name or None, model=_model(folder, notes))
    return Transcript(meta=meta, messages=messages, tools=t.tools, notes=notes)


def read(path: Path) -> Transcript:
    """A ``ui_messages.json`` file (with its folder's API history when beside it), or a task folder."""
    path = Path(path)
    if path.is_dir():
        return read_folder(path)
    if path.name == UI_MESSAGES and (path.parent / API_HISTORY).is_file():
        return read_folder(path.parent)
    return read_ui(path)


# -- detection -------------------------------------------------------------------------------


def _is_ui_record(rec: Any) -> bool:
    if not isinstance(rec, dict):
        return False
    side = rec.get("type")
    return isinstance(rec.get("ts"), (int, float)) and side in ("say", "ask") and isinstance(rec.get(side), str)


_HEAD = re.compile(r'^\s*\[\s*\{\s*"ts"\s*:\s*\d+\s*,\s*"type"\s*:\s*"(?:say|ask)"\s*,\s*"(?:say|ask)"\s*:\s*"')


def sniff(probe: FileHead) -> int:
    doc = probe.document
    if isinstance(doc, list):
        head = doc[:20]
        # Every one of the first records must be a UI record: other JSON lists are never claimed.
        return 90 if head and all(_is_ui_record(r) for r in head) else 0
    if probe.shape == "json" and doc is None and _HEAD.match(probe.head):
        return 80  # too large to parse while probing; Cline writes ts, type and say/ask first
    return 0


def is_task_folder(path: Path) -> bool:
    """Whether ``load`` reads ``path`` by its path, as this format's folder."""
    return path.is_dir() and bool(task_files(path))


FORMAT = Format(
    name=NAME,
    description="Cline / Roo Code task folders: ui_messages.json, with api_conversation_history.json when beside it",
    sniff=sniff,
    read=read,
    kinds=frozenset({"file", "folder"}),
    finds=is_task_folder,
    read_found=read_folder,
)
