"""What every reader of a file or store of several sessions shares: which one to read, and the ids it lists.

The readers (Goose's and Crush's databases, Cursor, Zed, OpenCode storage, an
aider history, an OpenHands output.jsonl, an HTTP log) list their sessions as
``SessionInfo`` and pick one with ``pick_session``; an id they do not hold is
``unknown_session``'s error. ``lab.formats.session_choice`` offers them all
through ``lab.formats.sessions`` and ``load(path, session=ID)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core.messages import ImportNotes
from ..errors import TranscriptError
from .history_builder import parse_timestamp
from .registry import SessionInfo

__all__ = ["SHOWN", "SessionInfo", "iso_time", "newest_first", "unknown_session", "Candidate", "pick_session"]

# How many ids an unknown-id error names: enough to spot a typo, few enough for one line.
SHOWN = 10
# What the errors tell a user to run for the whole list.
_HOW = "`python -m lab sessions PATH` or lab.formats.sessions(path) lists them"


def iso_time(value: object) -> str | None:
    """A recorded time (ISO text, epoch seconds or milliseconds) as ISO 8601, or None."""
    stamp = parse_timestamp(value)
    return stamp.isoformat() if stamp is not None else None


def newest_first(infos: Sequence[SessionInfo]) -> list[SessionInfo]:
    """Sessions by ``updated``, newest first; those without a time keep their order, after the others."""
    stamped = [(parse_timestamp(s.updated), n, s) for n, s in enumerate(infos)]
    timed = [(stamp, n, s) for stamp, n, s in stamped if stamp is not None]
    # Newest first; equal times keep the reader's order (-n, as the sort is reversed).
    timed.sort(key=lambda row: (row[0], -row[1]), reverse=True)
    return [s for _, _, s in timed] + [s for stamp, _, s in stamped if stamp is None]


def unknown_session(session: str, ids: Sequence[str], *, file: str, what: str, how: str = _HOW) -> TranscriptError:
    """The error for an id the file does not hold: up to ``SHOWN`` of the ids it does."""
    shown = ", ".join(repr(i) for i in ids[:SHOWN]) + (", ..." if len(ids) > SHOWN else "")
    return TranscriptError(
        f"no session {session!r} in {what}",
        file=file,
        expected=f"one of its {len(ids)} session ids ({shown or 'none'}); {how}",
    )


@dataclass(frozen=True)
class Candidate:
    """One session of a store as ``pick_session`` weighs it: the store's own rows, newest first."""

    id: str
    messages: int
    title: str | None = None
    # False for a session the agent's own list leaves out (a sub-agent's, a hidden one): never the default
    # while another has messages.
    listed: bool = True


def pick_session(
    candidates: Sequence[Candidate], session_id: str | None, *, file: str, store: str, noun: str, module: str, notes: ImportNotes
) -> int:
    """The index of the session a store's reader reads: ``session_id``, else the newest listed one with messages.

    One rule for every database that holds several sessions (Goose, Crush, Cursor): asked by id, an
    unknown id or an empty session is a ``TranscriptError``; by default, the newest listed session with
    messages (any, when none is listed), with a warning naming how many the store holds and how to pick
    another. ``store`` names the file in messages ("Goose database"), ``noun`` one of its sessions
    ("Goose session"), ``module`` the reader under ``lab.formats``.
    """
    if session_id is not None:
        for k, c in enumerate(candidates):
            if c.id == session_id:
                if not c.messages:
                    raise TranscriptError(f"{noun} {session_id!r} has no messages", file=file)
                return k
        raise unknown_session(
            session_id, [c.id for c in candidates], file=file, what=f"this {store}",
            how=f"`python -m lab sessions PATH` or lab.formats.{module}.list_sessions(path) lists them",
        )  # fmt: skip
    full = [k for k, c in enumerate(candidates) if c.messages]
    if not full:
        raise TranscriptError(f"this {store} holds {len(candidates)} session(s), none with messages", file=file, expected="a session with messages")
    listed = [k for k in full if candidates[k].listed]
    chosen = (listed or full)[0]
    if len(full) > 1:
        c = candidates[chosen]
        unlisted = len(full) - len(listed)
        aside = f" ({unlisted} of them sub-agents' or hidden, never the default)" if unlisted and listed else ""
        rest = [candidates[k] for k in full if k != chosen]
        others = ", ".join(f"{o.id} ({o.messages} messages{'' if o.listed else ', sub-agent or hidden'})" for o in rest[:3]) + (", ..." if len(rest) > 3 else "")
        notes.warnings.append(
            f"this {store} holds {len(full)} sessions with messages{aside}; read the most recently updated"
            f"{' main' if unlisted and listed else ''} one, {c.id!r} ({c.title or 'untitled'}); others: {others}; pick one with --session ID "
            f"or lab.formats.{module}.read_db(path, session_id=...) (all ids: `python -m lab sessions PATH`, lab.formats.{module}.list_sessions(path))"
        )
    return chosen
