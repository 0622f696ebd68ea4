"""Claude Code session files: one JSON entry per line (or one JSON array of entries).

What the importer rebuilds from the entries:

- The conversation is the uuid/parentUuid chain ending at each thread's last
  message (``claude_code_chain``): abandoned branches (a rewound prompt, a
  retry) are dropped and counted as ``abandoned_branch``; entries written out
  of conversation order are put back in it; a parent missing from the file
  continues the chain with the line before. A file that needs any of this is
  read twice: the first pass streams and records the tree, the second keeps
  only the chain. A file that is its own chain (the common case) is read once.
- Entries of one API message are merged into one assistant message, and the
  tool-result entries that answer it into one user message
  (``claude_code_thread``).
- ``isSidechain`` entries (subagents) are kept apart in ``Transcript.sidechains``:
  those of the session file, and those of the files Claude Code 2.1 writes
  beside it (``<session>/subagents/agent-<id>.jsonl``), read after it, or,
  as Claude Code 2.0 wrote them, the ``agent-<id>.jsonl`` files in the
  session's own folder whose entries name its ``sessionId``; a subagent file
  that cannot be read is skipped with a warning.
  A thread is keyed by the id of the main thread's ``Task``/``Agent`` tool_use
  that started it (its result's ``toolUseResult.agentId``, else its prompt),
  else by its ``agentId``, else by its root entry's uuid. A subagent's own file
  (``agent-<id>.jsonl``, every line a sidechain) imports as the main thread.
- A compaction (``isCompactSummary`` user entry, and the newer ``system`` entry
  with ``subtype: compact_boundary``) becomes a boundary message followed by the
  summary as a user message tagged ``summary``. The messages a compaction kept
  verbatim (``compactMetadata.preservedSegment``, written before the boundary)
  follow the summary, as Claude Code sent them, and the boundary names them
  (``preserved_first_id``/``preserved_last_id``). A ``microcompact_boundary``
  (old tool results cleared from later requests, the history left whole) is
  no such boundary: counted as ``system:microcompact_boundary``.
- A message typed while the agent worked and taken into the running turn is
  written as an ``attachment`` entry of type ``queued_command``, with no user
  entry: it becomes a user message after the turn's tool results (tagged
  ``placeholder`` when a task notification or another producer, not a person,
  sent it).
- Text Claude Code wrote in the user's place was sent to the model, so it is
  kept, tagged ``placeholder`` (never the user's words): ``isMeta`` entries
  (command caveats, expanded skills, hook feedback), local command lines and
  their output (user entries, or ``system`` entries of subtype
  ``local_command``), shell-mode lines, interruption notices, and a user
  message of nothing but the IDE extensions' ``<ide_opened_file>`` /
  ``<ide_selection>`` notes (``claude_code_content``).
- ``isApiErrorMessage`` assistant entries are Claude Code's own error notices,
  never a model reply, and never sent again: skipped and counted
  (``api_error_message``).
- Record types the model has no place for (hook output and other ``system``
  subtypes, counted as ``system:<subtype>``; ``progress``, the other
  ``attachment`` kinds, queue operations, snapshots, titles, ...) and unknown types are skipped and
  counted by type in ``notes.skipped``; so are repeated uuids (``duplicate``).
- A tool result holds the tool's whole output even where Claude Code 2.1 sent
  the model a preview of it (a ``content-replacement`` record naming the
  ``toolUseId``, the full output saved to disk): the replay's own stages
  compact raw output, as a recorded compaction is undone. The records are
  counted, and a warning says how many results were sent as previews.
- Blocks the canonical model has no kind for (server tool calls and results,
  documents, redacted thinking) become text or thinking markers; images become
  ``ImageBlock`` placeholders, or ``[image: ...]`` markers inside tool results.
- ``meta.cwd`` is the last working directory the main thread recorded; the
  title is the last ``custom-title``, else the last ``ai-title``, else the
  first ``summary``.

The work is split by concern: ``claude_code_import`` turns entries into
messages, ``claude_code_thread`` merges the entries of one thread,
``claude_code_chain`` follows the uuid tree, ``claude_code_content`` handles
blocks and harness text, ``claude_code_entry`` is the Struct of the fields an
entry is read for. Entries are streamed, each line decoded straight into that
Struct (the fields nothing reads are skipped unbuilt, the common content blocks
decoded into Parts the block models are built from; a line it cannot take is
read as a dict and made into the same ``Entry``), and an import runs with the
garbage collector paused (``jsonio.gc_paused``); ``python -m lab bench`` prints
what it costs against ``json.loads`` of the same lines. The first pass looks no
uuid up line by line (``EntryImporter``'s ``optimistic``): a file in which a uuid
repeats, which it notices at the end, is read again with that check. A JSONL
session still being written, its last line cut off mid-record, imports up to
that line with a warning.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from ...core.messages import Transcript
from ...errors import TranscriptError
from .claude_code_entry import Entry
from .claude_code_import import EntryImporter
from .claude_code_thread import parse_ts
from ..jsonio import gc_paused, iter_jsonl_as, leading_char, read_file_head, read_json
from ..registry import FileHead, Format

__all__ = ["FORMAT", "ENTRY_TYPES", "read", "read_entries", "sniff"]

# Every record type Claude Code is known to write; only user, assistant and a few system entries
# make messages. Several are state records of Claude Code 2.1 (titles, modes, snapshots).
ENTRY_TYPES = frozenset(
    {
        "user", "assistant", "system", "summary", "queue-operation", "attachment", "last-prompt", "file-history-snapshot",
        "file-history-delta", "progress", "mode", "permission-mode", "ai-title", "custom-title", "agent-name", "tag",
        "content-replacement", "attribution-snapshot", "pr-link", "relocated", "cost-state", "agent-setting", "agent-color",
        "worktree-state", "task-summary",
    }
)  # fmt: skip
_ts = parse_ts

Entries = Iterable[tuple[str, dict[str, Any]]]


# Feeds every entry of a source to an importer (its ``add``, and its notes for warnings); called once per pass.
Feed = Callable[[EntryImporter], None]


def _array_entries(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    doc = read_json(path)
    if not isinstance(doc, list):
        raise TranscriptError("top level is not an array", file=str(path), where="$", expected="an array of entries")
    for i, entry in enumerate(doc):
        if not isinstance(entry, dict):
            raise TranscriptError(f"entry is {type(entry).__name__}", file=str(path), where=f"$[{i}]", expected="an entry object")
        yield f"$[{i}]", entry


def _pairs(entries: Callable[[], Entries]) -> Feed:
    def feed(importer: EntryImporter) -> None:
        add = importer.add
        for where, entry in entries():
            add(entry, where)

    return feed


def _jsonl(path: Path) -> Feed:
    def feed(importer: EntryImporter) -> None:
        # The large case: straight from the line reader, no pair made per line. Each pass reads
        # the file again, so each pass's notes get the warning of a cut-off last line.
        add = importer.add
        for line_no, entry in iter_jsonl_as(path, Entry, notes=importer.notes):
            add(entry, line_no)

    return feed


def _subagent_files(path: Path) -> list[Path]:
    """The subagent transcripts beside a session file: ``<session>/subagents/agent-*.jsonl`` (Claude Code 2.1)."""
    folder = path.with_suffix("") / "subagents"
    if path.suffix != ".jsonl" or not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("agent-*.jsonl") if p.is_file())


# Agent files beside a session that are opened to find its own: a project folder may hold thousands.
_MAX_SIBLINGS = 2_000


def _sibling_agent_files(path: Path, probe: FileHead) -> list[Path]:
    """Claude Code 2.0's subagent files, written beside the session as ``agent-<id>.jsonl``: those of this session.

    Every line of such a file names the parent's ``sessionId``; the session's own id is its file's
    stem (``<sessionId>.jsonl``) and the ``sessionId`` of its first entries. Only each file's first
    line is read to tell.
    """
    if path.suffix != ".jsonl" or path.name.startswith("agent-"):
        return []
    siblings = sorted(path.parent.glob("agent-*.jsonl"))
    if not siblings:
        return []
    ids = {path.stem} | {r["sessionId"] for r in probe.records or [] if isinstance(r, dict) and isinstance(r.get("sessionId"), str)}
    found: list[Path] = []
    for n, file in enumerate(siblings):
        if n >= _MAX_SIBLINGS:
            break
        try:
            with open(file, "rb") as fh:
                first = json.loads(fh.readline(1 << 16) or b"null")
        except (OSError, ValueError):
            continue
        if isinstance(first, dict) and first.get("sessionId") in ids and first.get("isSidechain") is True:
            found.append(file)
    return found


def _with_subagents(main: Feed, files: list[Path]) -> Feed:
    def feed(importer: EntryImporter) -> None:
        main(importer)
        add = importer.add
        for file in files:
            # Named by file and line: their line numbers alone would repeat the session file's.
            line = 0
            try:
                for line, entry in iter_jsonl_as(file, Entry, notes=importer.notes):
                    add(entry, f"{file.name} line {line}")
            except (TranscriptError, OSError) as exc:
                # The session is whole without it: its Task/Agent results hold what the subagent returned.
                reason = exc.reason if isinstance(exc, TranscriptError) else str(exc)
                importer.notes.warnings.append(f"subagent file {file.name} not read past line {line}: {reason}")

    return feed


def _import(feed: Feed, file: str) -> Transcript:
    """Read the entries once, and again when a uuid repeats, or when the chain drops or reorders some."""
    with gc_paused():
        first = EntryImporter(file, optimistic=True)
        feed(first)
        if first.repeated_uuids():
            # The optimistic pass let a repeated uuid through: read again, skipping repeats line by line.
            first = EntryImporter(file)
            feed(first)
        plan = first.chain_plan()
        if not plan.needed:
            return first.finish(plan)
        del first
        second = EntryImporter(file, plan)
        feed(second)
        return second.finish()


def read_entries(entries: Entries, *, file: str = "<entries>") -> Transcript:
    """Build a transcript from ``(where, entry)`` pairs already parsed."""
    held = entries if isinstance(entries, (list, tuple)) else list(entries)
    return _import(_pairs(lambda: held), file)


def _agent_sdk_records(probe: FileHead) -> bool:
    """Whether the file's first records are Agent SDK stream-json (``parent_tool_use_id``, no ``parentUuid``)."""
    records = probe.document[:20] if isinstance(probe.document, list) else probe.records or []
    dicts = [r for r in records if isinstance(r, dict)]
    return any("parent_tool_use_id" in r for r in dicts) and not any("parentUuid" in r for r in dicts)


def read(path: Path) -> Transcript:
    path = Path(path)
    # Read once: it tells Agent SDK output apart, and names the session's id for its 2.0 agent files.
    probe = read_file_head(path)
    if _agent_sdk_records(probe):
        # Read as entries, a subagent's records (parent_tool_use_id) would join the main thread unseen.
        raise TranscriptError("Claude Agent SDK stream-json, not a Claude Code session file", file=str(path), expected="Claude Code entries with a parentUuid chain")
    if leading_char(path) == "[":
        return _import(_pairs(lambda: _array_entries(path)), str(path))
    feed = _jsonl(path)
    subagents = _subagent_files(path) or _sibling_agent_files(path, probe)
    del probe  # its parsed head is not kept through the import, which streams the file
    return _import(_with_subagents(feed, subagents) if subagents else feed, str(path))


def _entry_score(rec: Any) -> int:
    kind = rec.get("type") if isinstance(rec, dict) else None
    if not isinstance(kind, str) or kind not in ENTRY_TYPES:
        return 0
    if not any(k in rec for k in ("uuid", "parentUuid", "sessionId", "leafUuid")):
        return 0
    return 95 if isinstance(rec.get("message"), dict) else 85


def _gemini_content(rec: Any) -> bool:
    msg = rec.get("message") if isinstance(rec, dict) else None
    return isinstance(msg, dict) and isinstance(msg.get("parts"), list) and "content" not in msg


def sniff(probe: FileHead) -> int:
    records: list[Any] = []
    if isinstance(probe.document, list):
        records = probe.document[:20]
    elif probe.records:
        records = probe.records
    if records:
        if any(_gemini_content(r) for r in records):
            # Qwen Code writes the same uuid/parentUuid envelope around Gemini Content: lab.formats.editors.qwen_code's.
            return 0
        return max(_entry_score(r) for r in records)
    head = probe.head
    if '"parentUuid"' in head and '"sessionId"' in head and '"type"' in head:
        return 70
    return 0


FORMAT = Format(name="claude_code", description="Claude Code session JSONL (~/.claude/projects/*/*.jsonl)", sniff=sniff, read=read)
