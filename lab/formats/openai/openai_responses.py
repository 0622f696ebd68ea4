"""OpenAI Responses API items, and detection of Codex CLI rollouts.

Accepted sources: a Responses request body ``{"model", "instructions",
"input": [...] | "text", "tools"}`` or a bare list of input items (JSON); a
TypeScript Codex CLI rollout (spring 2025), one document ``{"session": {id,
timestamp, instructions}, "items": [...]}``; a Codex CLI rollout (JSONL),
current or older, read by ``lab.formats.openai.codex`` (``read_rollout``, importable
from here too), which builds on ``add_item``.

Item mapping (``add_item``): ``message`` (input_text / output_text / refusal /
input_image parts; roles system and developer -> system) -> text;
``reasoning`` -> thinking (summary text, else reasoning content;
encrypted-only reasoning is counted, not kept); ``function_call`` (a
``namespace`` prefixes the name, as Codex does), ``custom_tool_call`` (its
freeform ``input``, e.g. an apply_patch body), ``local_shell_call`` (the exec
action as the arguments of Codex's shell tool: ``command`` array, ``workdir``,
``timeout_ms``), ``computer_call`` and client-side ``tool_search_call`` ->
tool_use; their outputs -> tool_result (consecutive ones in one user message;
an output without a ``call_id``, optional in newer Codex, answers no call and
is counted). ``agent_message`` (a message from another Codex agent:
``{author, recipient, content: [input_text | encrypted_content]}``) -> a user
message of its readable text.
An output is a string, a list of content items or ``{content, success}``;
``success: false`` marks an error, and so does a Codex shell output reporting
a non-zero exit code (Codex records no success flag). Consecutive assistant
items form one assistant message. Items run by the provider or opaque
(web_search_call, image_generation_call, ghost_snapshot, context_compaction, compaction_trigger, additional_tools, ...) and unknown
types are skipped and counted as ``item:<type>``. A ``compaction`` item (also
spelled ``compaction_summary``; the
API's server-side compaction: an encrypted summary the server reads in place of
the items before it) becomes a boundary and a placeholder summary a replay
undoes; inside a Codex ``compacted`` record's replacement history it is the
end of what that record already marks, and is counted.

Detection (``sniff``): 95 for a Codex rollout (records ``{type, payload}``),
85 for an older rollout (a bare session header, then bare items), 90 for
documents whose items carry Responses types or ``input_text``/``output_text``
parts (a TypeScript CLI rollout too), 80 for JSONL of bare items, 0 otherwise
(plain ``{role, content}`` lists belong to Chat).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ...core.messages import ImportNotes, TextBlock, Transcript, TranscriptMeta
from ...errors import TranscriptError
from ..history_builder import HistoryBuilder, Loc, tool_specs
from ..jsonio import read_json
from .codex import read_rollout as read_codex
from .openai_chat import add_responses_item as add_item
from .responses_items import COMPACTION_ITEMS, COMPACTION_STRATEGY, ITEM_TYPES, NAME, ROLLOUT_RECORDS, SERVER_ITEMS, is_rollout_header
from ..registry import Format, FileHead

__all__ = [
    "FORMAT", "ITEM_TYPES", "SERVER_ITEMS", "COMPACTION_ITEMS", "COMPACTION_STRATEGY", "ROLLOUT_RECORDS", "read", "read_rollout", "from_document", "from_items",
    "add_item", "is_rollout_header", "sniff",
]

def from_items(
    items: Iterable[Any], *, file: str | None = None, path: str = "$", instructions: str | None = None
) -> Transcript:
    """Convert Responses items found at JSON ``path``; ``instructions`` becomes the system message."""
    notes = ImportNotes()
    b = HistoryBuilder(notes)
    if instructions:
        b.add("system", [TextBlock(text=instructions)], key="instructions")
    base = Loc(file, path)
    n = 0
    for n, item in enumerate(items, 1):
        add_item(b, item, base.at(n - 1), f"i{n - 1}")
    notes.records_read = n
    return Transcript(meta=TranscriptMeta(source_format=NAME, source_path=file), messages=b.finish(), notes=notes)


def _instructions(value: Any) -> str | None:
    if isinstance(value, dict):
        value = value.get("text")
    return value if isinstance(value, str) and value else None


def _is_ts_rollout(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("session"), dict) and isinstance(doc.get("items"), list)


def from_document(doc: Any, *, file: str | None = None) -> Transcript:
    """A Responses request body, a bare list of input items, or a TypeScript Codex CLI rollout."""
    if isinstance(doc, list):
        return from_items(doc, file=file)
    if _is_ts_rollout(doc) and "input" not in doc:
        session = doc["session"]
        t = from_items(doc["items"], file=file, path="$.items", instructions=_instructions(session.get("instructions")))
        t.meta.session_id = session.get("id") if isinstance(session.get("id"), str) else None
        t.meta.title = "Codex CLI rollout (TypeScript CLI)"
        return t
    if not isinstance(doc, dict) or "input" not in doc:
        raise TranscriptError("no Responses input found", file=file, where="$", expected="a list of items or an object with 'input'")
    raw = doc["input"]
    items = [{"type": "message", "role": "user", "content": raw}] if isinstance(raw, str) else raw
    if not isinstance(items, list):
        raise TranscriptError("input is not a list", file=file, where="$.input", expected="a string or a list of items")
    t = from_items(items, file=file, path="$.input", instructions=_instructions(doc.get("instructions")))
    t.meta.model = doc.get("model") if isinstance(doc.get("model"), str) else None
    t.tools = tool_specs(doc.get("tools"))
    return t


# -- Codex rollouts (read in lab.formats.openai.codex) -------------------------------------


def read_rollout(path: Path) -> Transcript:
    """A Codex CLI rollout (JSONL), current or older: see ``lab.formats.openai.codex``."""
    return read_codex(path)


def _is_rollout(path: Path) -> bool:
    """JSONL when the first non-blank line is a whole JSON object and another line follows."""
    with Path(path).open("r", encoding="utf-8-sig", errors="replace") as fh:
        first = next((line for line in fh if line.strip()), "")
        more = any(line.strip() for line in fh)
    try:
        rec = json.loads(first)
    except ValueError:
        return False
    return isinstance(rec, dict) and (more or (_type_in(rec, ROLLOUT_RECORDS) and "payload" in rec))


def read(path: Path) -> Transcript:
    try:
        rollout = _is_rollout(path)
    except OSError as exc:
        raise TranscriptError(f"cannot read file: {exc}", file=str(path)) from None
    if rollout:
        return read_rollout(path)
    return from_document(read_json(path), file=str(path))


# -- detection -------------------------------------------------------------------

_HEAD_CODEX = re.compile(r'"type"\s*:\s*"(?:session_meta|response_item)"\s*,\s*"payload"\s*:')
_HEAD_ITEMS = re.compile(
    r'"type"\s*:\s*"(?:function_call|function_call_output|input_text|output_text|reasoning|custom_tool_call|local_shell_call)"'
)
_HEAD_TS_ROLLOUT = re.compile(r'\A\s*\{\s*"session"\s*:\s*\{')


def _type_in(d: dict[str, Any], options: set[str] | tuple[str, ...]) -> bool:
    kind = d.get("type")
    return isinstance(kind, str) and kind in options


def _items_score(items: Any) -> int:
    if not isinstance(items, list) or not items or not all(isinstance(i, dict) for i in items):
        return 0
    for item in items:
        if _type_in(item, ITEM_TYPES - {"message"}) or (item.get("type") == "message" and "role" in item):
            return 90
        content = item.get("content")
        if isinstance(content, list) and any(isinstance(p, dict) and _type_in(p, ("input_text", "output_text")) for p in content):
            return 90
    return 0


def sniff(probe: FileHead) -> int:
    if probe.shape == "jsonl" and probe.records:
        recs = [r for r in probe.records if isinstance(r, dict)]
        if any(_type_in(r, ROLLOUT_RECORDS) and isinstance(r.get("payload"), dict) for r in recs):
            return 95
        items = ITEM_TYPES | SERVER_ITEMS
        if recs and is_rollout_header(recs[0]):
            rest = recs[1:]
            return 85 if any(_type_in(r, items) for r in rest) or (not rest and "instructions" in recs[0]) else 0
        return 80 if recs and all(_type_in(r, items) or "record_type" in r for r in recs) else 0
    doc = probe.document
    if doc is not None:
        if isinstance(doc, dict):
            if _type_in(doc, ROLLOUT_RECORDS) and isinstance(doc.get("payload"), dict):
                return 95  # a rollout of a single record
            if _is_ts_rollout(doc) and "input" not in doc:
                return _items_score(doc["items"])
            return _items_score(doc.get("input")) if "messages" not in doc else 0
        return _items_score(doc)
    head = probe.head
    if _HEAD_CODEX.search(head):
        return 95
    if (re.search(r'"input"\s*:\s*\[', head) or _HEAD_TS_ROLLOUT.match(head)) and _HEAD_ITEMS.search(head):
        return 90
    if head.lstrip().startswith("[") and _HEAD_ITEMS.search(head):
        return 80
    return 0


FORMAT = Format(
    name=NAME,
    description="OpenAI Responses API items and Codex CLI rollouts (JSONL, older JSONL, TypeScript CLI JSON)",
    sniff=sniff,
    read=read,
    rivals="request_bodies",
)
