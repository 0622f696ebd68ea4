"""A folder of one-session files, as agents keep them: its sessions, listed and read one at a time.

Most agents write one file (or folder) per session into one place: Claude Code's
``~/.claude/projects/<project>/``, Codex's ``~/.codex/sessions/<yyyy>/<mm>/<dd>/``,
Qwen Code's ``chats/``, Continue's ``~/.continue/sessions/``, Cline's ``tasks/``
(a folder per task), a run's folder of SWE-agent trajectories. Such a folder is
read here as a session list, as ``lab.formats.session_choice`` reads a database
that holds several:

* ``list_sessions(folder)``: every file detection claims (and every session folder
  ``lab.formats.detect.path_format`` knows) under the folder, at any depth, as ``SessionInfo``
  whose id is its path relative to the folder (POSIX separators), newest first by
  modification time; ``messages`` counts its records before import (JSONL lines, a
  JSON list's items or a document's longest list, a folder's files); ``title`` is
  the agent's own summary line or the first user text among what detection read
  (text a harness wrote in the user's place, which opens with markup, passed over);
* ``read_session(folder, id)``: that one, read as ``load`` reads the file itself; a file that
  holds several sessions (an evaluation output.jsonl, an aider history, a store) is listed as
  one entry per session, ``FILE#ID``, read as ``load(FILE, session=ID)`` reads it;
* ``read_newest(folder)``: the most recently modified one, with a warning naming
  how many the folder holds and how to pick another (what ``load(folder)`` does).

Why each rule exists:

* an id comes from a user (``--session``, an app widget): it must name a path inside
  the folder, so absolute paths, ``..`` and links that lead out are refused;
* hidden entries (``.git``, ``.DS_Store``, a half-written ``.x.tmp``) and links are
  skipped, as the corpus and compare skip them; a link could lead anywhere;
* a home folder holds anything: at most ``MAX_ENTRIES`` entries are looked at, and a
  folder with more is an error that says to point at a smaller one;
* a file no format claims is skipped and counted, never an error: a session folder
  also holds notes, tool-output caches and the like;
* a batch run (compare, sweep) leaves note and data files out by their suffix
  (``NOTE_SUFFIXES``, ``is_note_file``), except a ``.md`` whose head is an aider chat
  history's (``# aider chat started at ...``): aider keeps its sessions in
  ``.aider.chat.history.md``, and a folder compare must not drop them unseen.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from ...core.messages import Transcript
from ...errors import TranscriptError
from ..detect import candidates, known_format, path_format
from ..editors.aider import is_chat_history_head
from ..jsonio import read_file_head, with_repair_note
from ..registry import Loader, SessionInfo, Wrapper
from ..session_choice import several
from ..session_pick import newest_first

__all__ = ["MAX_ENTRIES", "NOTE_SUFFIXES", "is_note_file", "FolderListing", "WRAPPER", "holds_sessions", "walk", "listing", "list_sessions", "read_session", "read_newest"]

MAX_ENTRIES = 20_000
# Files in a folder that are notes or data, never transcripts, by suffix; a batch run leaves them out.
NOTE_SUFFIXES = (".md", ".txt", ".csv", ".parquet", ".py")
# How much of a ``.md`` file is read to tell an aider chat history from a note.
_HEAD_BYTES = 4096
# Where Claude Code keeps a session's subagents: listed, marked, never the default.
_SUBAGENT_DIR = "subagents"


@dataclass(frozen=True)
class FolderListing:
    """The sessions of a folder, newest first, and what was passed over on the way."""

    sessions: list[SessionInfo]
    # Files and folders no format claims, or that could not be read.
    skipped: int
    links: int


def holds_sessions(folder: Path) -> bool:
    """Whether ``folder`` is a folder that no by-path reader reads as one session (cheap: no transcript is read)."""
    return folder.is_dir() and path_format(folder) is None


def is_note_file(path: Path) -> bool:
    """Whether a batch run leaves ``path`` out as a note or data file: its suffix is one of ``NOTE_SUFFIXES``,
    and it is not a ``.md`` aider chat history (told by its head, so no file is read through)."""
    suffix = Path(path).suffix.lower()
    if suffix not in NOTE_SUFFIXES:
        return False
    if suffix != ".md":
        return True
    try:
        with open(path, "rb") as fh:
            head = fh.read(_HEAD_BYTES).decode("utf-8-sig", errors="replace")
    except OSError:
        return False  # not a note we can tell: listed, and its read says what is wrong
    return not is_chat_history_head(head)


def walk(folder: Path, counts: dict[str, int], *, limit: int | None = None) -> Iterator[tuple[Path, bool]]:
    """(path, is a session folder) for every candidate under ``folder``: files, and folders a by-path reader reads.

    Hidden entries are passed over, links counted in ``counts["links"]`` and not followed, unreadable
    folders counted in ``counts["unreadable"]``; a session folder is one candidate, never looked into.
    Past ``limit`` entries (``MAX_ENTRIES`` when None; 0 for no limit) it is a ``TranscriptError``.
    """
    cap = MAX_ENTRIES if limit is None else limit
    seen = 0
    stack = [folder]
    while stack:
        current = stack.pop()
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError:
            counts["unreadable"] += 1
            continue
        for entry in entries:
            seen += 1
            if cap and seen > cap:
                raise TranscriptError(
                    f"holds more than {cap:,} entries: too many to look through for sessions",
                    file=str(folder), expected="a folder of session files, e.g. ~/.claude/projects/<project>; point at a smaller one",
                )
            if entry.name.startswith("."):
                continue
            if entry.is_symlink():
                counts["links"] += 1
                continue
            path = Path(entry.path)
            if entry.is_dir():
                if path_format(path) is not None:
                    yield path, True
                else:
                    stack.append(path)
            elif entry.is_file():
                yield path, False


def _records(path: Path, probe_records: list[object] | None, document: object) -> int:
    """How many records a file holds before import: JSONL lines, a list's items, a document's longest list."""
    if isinstance(document, list):
        return len(document)
    if isinstance(document, dict):
        lists = [len(v) for v in document.values() if isinstance(v, list)]
        return max(lists, default=1)
    lines = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            lines += chunk.count(b"\n")
    return lines or (1 if probe_records else 0)


# A title is one line of at most this many characters; at most this many JSON values are looked through for it.
_TITLE_CHARS = 80
_TITLE_NODES = 2_000
_TITLE_DEPTH = 6
# User text a harness wrote in the user's place opens with markup: environment context, caveats, command tags.
_INJECTED = ("<", "[", "{")
# It also opens with a heading naming the instructions file it carries ("# AGENTS.md instructions for ..."); a
# heading of the user's own ("# Task") is the user's.
_INJECTED_HEADINGS = (".md", "instructions")
# Typed records that hold the user's words (Copilot CLI, AutoGen), beside the role-keyed ones.
_USER_TYPES = ("user.message", "UserMessage")


def _title(records: list[Any] | None, document: Any) -> str | None:
    """A title from what detection already parsed, never importing: the agent's own summary line
    (Claude Code's ``{"type": "summary"}``, a ``title`` field), else the first user text that is the user's."""
    values = records if records else ([document] if document is not None else [])
    for rec in values:
        if isinstance(rec, dict):
            named = rec.get("summary") if rec.get("type") == "summary" else rec.get("title")
            if isinstance(named, str) and named.strip():
                return _one_line(named)
    budget = [_TITLE_NODES]
    for rec in values:
        text = _user_text(rec, 0, budget)
        if text:
            return _one_line(text)
    return None


def _user_text(node: Any, depth: int, budget: list[int]) -> str | None:
    budget[0] -= 1
    if budget[0] < 0 or depth > _TITLE_DEPTH:
        return None
    if isinstance(node, dict):
        if node.get("role") == "user" or node.get("source") == "user" or node.get("type") in _USER_TYPES or node.get("part_kind") == "user-prompt":
            text = _text_of(node.get("content"))
            for holder in ("args", "data"):  # an OpenHands user message event; a Copilot CLI user.message
                if text is None and isinstance(node.get(holder), dict):
                    text = _text_of(node[holder].get("content"))
            if text is not None and not _injected(text):
                return text.lstrip().lstrip("#") if text.lstrip().startswith("#") else text
        values: Any = node.values()
    elif isinstance(node, list):
        values = node
    else:
        return None
    for value in values:
        if isinstance(value, (dict, list)):
            found = _user_text(value, depth + 1, budget)
            if found:
                return found
    return None


def _injected(text: str) -> bool:
    """Whether user text was written by the harness (see ``_INJECTED``), not typed by the user."""
    head = text.lstrip()
    if head.startswith("#"):
        first = head.split("\n", 1)[0].lower()
        return any(word in first for word in _INJECTED_HEADINGS)
    return head.startswith(_INJECTED)


def _text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content if content.strip() else None
    parts = content if isinstance(content, list) else []
    for part in parts:
        text = part.get("text") if isinstance(part, dict) else part if isinstance(part, str) else None
        if isinstance(text, str) and text.strip():
            return text
    return None


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _TITLE_CHARS else line[: _TITLE_CHARS - 1] + "…"


def _info(folder: Path, path: Path, is_folder: bool, format: str | None, detail: bool) -> SessionInfo | None:
    """The session at ``path``, or None when no format (or not ``format``) claims it.

    Without ``detail`` its title and record count are left out (0): counting reads the whole file.
    """
    rel = PurePosixPath(*path.relative_to(folder).parts)
    updated = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC).isoformat()
    if is_folder:
        name = path_format(path, format)
        if name is None:
            return None
        count = sum(1 for _ in path.rglob("*.json")) if detail else 0
        return SessionInfo(id=str(rel), title=None, messages=count, updated=updated, format=name, kind="folder")
    probe = read_file_head(path)
    ranked = candidates(probe)
    scores = dict(ranked)
    name = format if format is not None else (ranked[0][0] if ranked else None)
    if name is None or scores.get(name, 0) <= 0:
        return None
    kind = "subagent" if _SUBAGENT_DIR in rel.parts[:-1] or (name == "claude_code" and rel.name.startswith("agent-")) else None
    title = _title(probe.records, probe.document) if detail else None
    count = _records(path, probe.records, probe.document) if detail else 0
    return SessionInfo(id=str(rel), title=title, messages=count, updated=updated, format=name, kind=kind)


def listing(folder: Path, format: str | None = None, *, detail: bool = True) -> FolderListing:
    """The sessions under ``folder`` (see the module docstring), with what was skipped; ``detail``: as ``_info``."""
    counts = {"unreadable": 0, "links": 0}
    found: list[SessionInfo] = []
    for path, is_folder in walk(folder, counts):
        try:
            info = _info(folder, path, is_folder, format, detail)
        except (TranscriptError, OSError, RecursionError):
            info = None
        if info is None:
            counts["unreadable"] += 1
        elif detail and not is_folder and (inner := _several(path, info)):
            found += inner
        else:
            found.append(info)
    return FolderListing(sessions=newest_first(found), skipped=counts["unreadable"], links=counts["links"])


def _several(path: Path, info: SessionInfo) -> list[SessionInfo]:
    """Each session of a file that holds several (an evaluation output.jsonl, an aider history, a store), as
    ``FILE#ID``; none for a one-session file. What ``read_session`` reads back, and what compare reads."""
    found = several(path)
    if found is None:
        return []
    return [
        SessionInfo(id=f"{info.id}#{s.id}", title=s.title, messages=s.messages, updated=s.updated or info.updated, format=info.format, kind=s.kind)
        for s in found.listed
    ]


def list_sessions(folder: Path, format: str | None = None, *, detail: bool = True) -> list[SessionInfo]:
    """The sessions under ``folder``, newest first; TranscriptError when it holds none."""
    found = listing(folder, format, detail=detail)
    if not found.sessions:
        what = f"no {format} session" if format else "no transcript any format reads"
        raise TranscriptError(
            f"is a directory with {what} ({found.skipped} file(s) skipped, {found.links} link(s) not followed)",
            file=str(folder), expected="a folder of session files (each read as `python -m lab import FILE` reads it)",
        )
    return found.sessions


def _inside(folder: Path, session: str) -> Path:
    """The path the id ``session`` names inside ``folder``; TranscriptError for one that would lead out."""
    rel = PurePosixPath(session.replace("\\", "/"))
    controls = any(ord(c) < 0x20 or c == "\x7f" for c in session)  # a NUL makes no path at all
    if not session or controls or rel.is_absolute() or ".." in rel.parts or any(p.startswith(".") for p in rel.parts) or ":" in session:
        raise TranscriptError(f"not a session id of this folder: {session!r} (an id is a path inside it, as listed)", file=str(folder))
    target = folder.joinpath(*rel.parts)
    step = folder
    for part in rel.parts:
        step = step / part
        if step.is_symlink():
            # The listing never follows links, so an id through one was not listed: it may lead anywhere.
            raise TranscriptError(f"refused session {session!r}: {part!r} is a link (links are not followed)", file=str(folder))
    try:
        resolved = target.resolve(strict=True)
    except (OSError, RuntimeError):
        raise TranscriptError(
            f"no session {session!r} in this folder", file=str(folder), expected="an id `python -m lab sessions FOLDER` lists"
        ) from None
    if folder.resolve() not in resolved.parents:
        raise TranscriptError(f"refused session {session!r}: it leads out of the folder", file=str(folder))
    return target


def read_session(folder: Path, format: str | None, session: str, loader: Loader) -> Transcript:
    """The session ``session`` (an id ``list_sessions`` lists) of ``folder``, read as ``loader.load`` reads it;
    ``FILE#ID`` is the session ``ID`` of a file that holds several."""
    load = loader.load
    try:
        path = _inside(folder, session)
    except TranscriptError:
        if "#" not in session:
            raise
        name, inner = session.rsplit("#", 1)
        return load(_inside(folder, name), format, session=inner)
    return load(path, format)


def read_newest(folder: Path, format: str | None, loader: Loader) -> Transcript:
    """The most recently modified session of ``folder``, with a warning naming the others and how to pick one."""
    load = loader.load
    # Which sessions there are and when each changed, not how long each is: no file is read through.
    found = list_sessions(folder, format, detail=False)
    main = [s for s in found if s.kind != "subagent"] or found
    chosen = main[0]
    try:
        t = load(folder / chosen.id, format)
    except TranscriptError as e:
        if len(found) < 2:
            raise
        # The newest file is damaged or half-written: the others may read, and the error says how to get one.
        how = f"another of the folder's {len(found)} sessions with --session ID (`python -m lab sessions {folder}` lists them)"
        raise TranscriptError(e.reason, file=e.file, where=e.where, expected=f"{e.expected}; or {how}" if e.expected else how) from None
    if len(found) > 1:
        rest = [s.id for s in found if s is not chosen]
        others = ", ".join(rest[:3]) + (", ..." if len(rest) > 3 else "")
        t.notes.warnings.append(
            f"this folder holds {len(found)} sessions; read the most recently modified, {chosen.id!r}; others: {others}; "
            f"pick one with --session ID (all ids: `python -m lab sessions {folder}`)"
        )
    return t


def _load(folder: Path, format: str | None, session: str | None, loader: Loader) -> Transcript:
    if session is None:
        return read_newest(folder, format, loader)
    # A session picked by id: its read is not counted by a detection of its own, so the repairs note is added here.
    return with_repair_note(lambda: read_session(folder, known_format(format, folder), session, loader))


def _sessions(folder: Path, format: str | None, loader: Loader) -> list[SessionInfo]:
    return list_sessions(folder, known_format(format, folder))


WRAPPER = Wrapper(
    name="session_folder",
    description="a folder of sessions (~/.claude/projects/<project>, Codex's sessions/, Cline's tasks/): the newest, or one by --session",
    holds=holds_sessions,
    load=_load,
    sessions=_sessions,
    picks_sessions=True,
    kinds=frozenset({"folder"}),
)
