"""Which session to read from a file or folder that holds several.

Some agents keep many sessions in one place; their readers read one (the
newest, or the first record) and name the others in a warning. Each such
format declares a ``SessionSource`` (``lab.formats.registry``), and ``lab.formats``
offers two calls over all of them (``lab.formats.loading``):

* ``sessions(path, format=None)``: the sessions the path holds, as
  ``SessionInfo`` (id, title, messages, updated time when known), newest
  first (file order reversed when the file records no times: these files
  are appended to, so later is newer);
* ``load(path, format=None, session=ID)``: that one session.

The ids are the ones each reader lists:

    goose_db    Goose's session id (``sessions.id``, ``20260101_1``)
    opencode    OpenCode's session id (``ses_...``): a storage root, its data
                dir or ``opencode.db``; a session's own folder holds one
    aider       an index in file order ("0", "1", ...) over the sessions of a
                ``.aider.chat.history.md`` that have turns (sessions have no id)
    openhands   an evaluation ``output.jsonl``: the records' ``instance_id``
                when every record has a distinct one, else their index in
                file order ("0", "1", ...)
    http_log    an HTTP log (claude-trace, a proxy dump): an index in log order
                ("0", "1", ...) over its conversations (``lab.formats.http.http_log``)
    cursor      Cursor's composer id (``composerData:<id>``), or a chat tab's
                ``tabId`` in a workspace ``state.vscdb``
    zed         Zed's thread id (``threads.id``)
    crush       Crush's session id (``sessions.id``; a sub-agent's is its tool call's id)
    agents_sdk_db  the OpenAI Agents SDK's ``session_id`` (``agent_sessions``)
    (a folder)  a path inside it (``session_folder``)

The path names its format as ``load`` would find it (its folder checks, then
the best-scored format of the file); ``format`` forces one. A file (or session
folder) that holds one session lists as that one session: ``sessions`` reads
it (``one_session``), its id is the transcript's own session id ("0" when the
file records none), and ``load(path, session=ID)`` accepts that id, so what a
listing shows can always be picked. Its subagent threads (``Transcript.sidechains``:
a Claude Code file's sidechain records) are listed after it, kind ``subagent``,
by the thread's name (the id of the Task call that started it), and picked the
same way: the thread alone, as a transcript of its own. Any other id for such a file, or an id a
reader does not list, is a ``TranscriptError`` (the latter naming up to
``SHOWN`` ids).
"""


from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.messages import Transcript
from ..errors import TranscriptError
from .detect import accept, format_of
from .registry import FORMATS, WRAPPERS, Format, SessionInfo, SessionSource, session_sources
from .session_pick import newest_first

__all__ = ["SessionInfo", "READERS", "several", "Several", "read_each", "BATCH_SKIPS", "reader_of"]


class _Readers(Mapping[str, SessionSource]):
    """The formats that can hold several sessions, by name: a live view of the registry (plugins included)."""

    def __getitem__(self, name: str) -> SessionSource:
        return session_sources()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(session_sources())

    def __len__(self) -> int:
        return len(session_sources())


READERS: Mapping[str, SessionSource] = _Readers()


def reader_of(name: str, path: Path) -> Format | None:
    """The format ``name`` when ``path`` is one of its several-session containers, else None."""
    fmt = FORMATS.get(name)
    if fmt is None or fmt.sessions is None or not fmt.sessions.holds(path):
        return None
    return fmt


# Sessions a batch run (compare, sweep) leaves out of a store: a sub-agent's history is part of its parent's
# work, not a session of its own, and the agent's own session list leaves it out too; a side request of an HTTP
# log (a title or a quota check a client sent beside its conversation) is no session a compaction config changes.
BATCH_SKIPS = ("subagent", "sub_agent")
_SIDE = "side"


@dataclass(frozen=True)
class Several:
    """The sessions of a file or store that a batch run reads (``several``), and what it leaves out."""

    # The format whose ``sessions`` source lists and reads them.
    reader: Format
    sessions: list[SessionInfo]
    # Every session as the reader listed it (a folder listing shows them all), sub-agents' and empty ones too.
    listed: list[SessionInfo]
    # Sessions the store lists but a batch leaves out: sub-agents' (part of their parent's work), side requests and empty ones.
    subagents: int = 0
    empty: int = 0
    side: int = 0

    def describe(self, name: str) -> str:
        """One line for a batch's notes: what ``name`` holds and how it is read."""
        out = [f"{self.subagents} sub-agent session(s)"] if self.subagents else []
        out += [f"{self.empty} empty session(s)"] if self.empty else []
        out += [f"{self.side} side request(s)"] if self.side else []
        aside = f"; left out: {' and '.join(out)}" if out else ""
        what = self.reader.sessions.what if self.reader.sessions else self.reader.name
        return (f"{name} holds {len(self.sessions)} sessions ({what}): each is read as its own transcript, "
                f"named '{name} [ID]' (--session ID reads one alone){aside}")


def several(path: str | os.PathLike[str]) -> Several | None:
    """The sessions of a file or store that holds more than one, as a batch run takes them: in the store's own
    order (oldest first where it keeps one), without sub-agents' sessions, side requests or empty ones (counted).

    None for anything else: a one-session file, a folder of sessions (walked file by file instead), an
    archive, or a file detection cannot read (its own import then says why). Cheap for a one-session file:
    detection reads its head, nothing is imported.
    """
    p = Path(path)
    if any(w.holds(p) for w in WRAPPERS.values()):
        return None
    try:
        name = format_of(p, None)
    except TranscriptError:
        return None
    reader = reader_of(name, p)
    if reader is None or reader.sessions is None:
        return None
    try:
        listed = reader.sessions.list(p)
    except TranscriptError:
        return None
    # The readers list newest first; file order reversed: a batch reads a file in its own order.
    kept: list[SessionInfo] = []
    subagents = empty = side = 0
    for s in reversed(newest_first(listed)):
        if _is_subagent(s.kind):
            subagents += 1
        elif s.kind is not None and s.kind.lower().startswith(_SIDE):
            side += 1
        elif s.messages <= 0:
            empty += 1
        else:
            kept.append(s)
    return Several(reader, kept, listed, subagents, empty, side) if len(kept) > 1 else None


def _is_subagent(kind: str | None) -> bool:
    # Readers spell it their own way: "subagent", Goose's "sub_agent", OpenCode's "subagent of <parent id>".
    return kind is not None and kind.lower().replace("-", "_").startswith(BATCH_SKIPS)


def read_each(path: str | os.PathLike[str], reader: Format, infos: Sequence[SessionInfo]) -> Iterator[tuple[SessionInfo, Transcript | TranscriptError]]:
    """Each of ``infos`` (sessions ``several`` gave), read and checked as ``load`` checks an import, or the
    reason it cannot be: one session that fails does not stop the others."""
    p = Path(path)
    wanted = {s.id: s for s in infos}
    source = reader.sessions
    assert source is not None, f"{reader.name} holds one session per file"
    if source.each is not None:
        for sid, got in source.each(p):
            info = wanted.get(sid)
            if info is not None:
                yield info, _checked(got, reader.name, p)
        return
    for info in infos:
        try:
            one: Transcript | TranscriptError = source.read(p, info.id)
        except TranscriptError as e:
            one = e
        yield info, _checked(one, reader.name, p)


def _checked(got: Transcript | TranscriptError, name: str, path: Path) -> Transcript | TranscriptError:
    if isinstance(got, TranscriptError):
        return got
    try:
        return accept(got, name, file=str(path))
    except TranscriptError as e:
        return e
