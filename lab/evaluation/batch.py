"""What a batch run (a compare, a sweep) reads: every transcript of a folder, a file, or a list of either.

Every file is accounted for: read (one transcript, or each session of a file that holds several),
unreadable (with its one-line reason), or left out as no transcript at all (a note or data file, a
link not followed). A file that cannot be read never stops the others; ``Batch.check_strict`` makes it
an error before anything is replayed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Iterable

from ..core.messages import Transcript
from ..errors import LabError, TranscriptError
from ..formats.session_choice import read_each, several
from ..formats.containers.session_folder import is_note_file, walk
from ..replayer.explain import import_warnings
from ..replayer.inputs import as_transcript

__all__ = ["Batch", "read_batch", "folder_files", "folder_listing"]


def folder_files(source: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The transcripts of a folder, a file, or a list of either (``folder_listing`` without what it left out)."""
    return folder_listing(source)[0]


def folder_listing(source: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> tuple[list[Path], list[str]]:
    """The transcripts of a folder, a file, or a list of either: each file, and each session folder, once; and
    what a folder held that is left out, named relative to it, so a batch run can say so.

    A folder is walked as ``lab.formats.containers.session_folder`` walks one (hidden entries passed over, links not
    followed, no limit on its size), so a session folder inside it (an OpenHands V1 conversation, a Cline
    task, OpenCode storage) is one transcript, not the files it holds. Note and data files (``.md``,
    ``.txt``, ``.csv``, ``.parquet``, ``.py``) are left out, except a ``.md`` aider chat history
    (``session_folder.is_note_file``), and so are links (``NAME (link, not followed)``); any other file is
    listed, so one no format reads is an error row, not a silent gap.
    """
    items = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    files: list[Path] = []
    left_out: list[str] = []
    for item in items:
        p = Path(item)
        if p.is_dir():
            counts = {"unreadable": 0, "links": 0}
            found = sorted(walk(p, counts, limit=0))
            for f, is_folder in found:
                if is_folder or not is_note_file(f):
                    files.append(f)
                else:
                    left_out.append(f.relative_to(p).as_posix())
            left_out += _passed_over(counts)
        elif p.exists():
            files.append(p)
        else:
            raise LabError(f"no such file or folder: {p}")
    return files, left_out


def _passed_over(counts: dict[str, int]) -> list[str]:
    """What the walk counted and did not list (links are not followed, a folder may refuse listing), as items."""
    out: list[str] = []
    if counts["links"]:
        out.append(f"{counts['links']} link(s), not followed")
    if counts["unreadable"]:
        out.append(f"{counts['unreadable']} folder(s) that could not be listed")
    return out


def _load(path: Path) -> tuple[Transcript | None, str | None]:
    """A file's transcript, or the one-line reason it cannot be read."""
    try:
        return as_transcript(str(path)), None
    except Exception as e:  # noqa: BLE001 - one bad file must not end a folder run
        return None, _reason(e)


def _reason(e: Exception) -> str:
    if isinstance(e, LabError):
        return str(e).splitlines()[0] if str(e) else type(e).__name__
    return f"internal error: {type(e).__name__}: {e}"


@dataclass
class Batch:
    """What a batch run (a compare, a sweep) reads of a folder, a file or a list of either.

    ``items`` holds (name, transcript or None, the one-line reason it cannot be read), in listing order;
    ``notes`` says where one file gave several transcripts; ``left_out``, what a folder held that is no
    transcript (``folder_listing``).
    """

    items: list[tuple[str, Transcript | None, str | None]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)

    @property
    def unreadable(self) -> dict[str, str]:
        """Name -> why, for every item that could not be read."""
        return {name: error or "cannot read" for name, t, error in self.items if t is None}

    def check_strict(self) -> None:
        """A ``TranscriptError`` naming every unreadable item: what ``strict=True`` makes of them, before any replay."""
        bad = self.unreadable
        if bad:
            listed = "; ".join(f"{name} ({why})" for name, why in list(bad.items())[:3]) + (f"; ... and {len(bad) - 3} more" if len(bad) > 3 else "")
            raise TranscriptError(f"{len(bad)} of {len(self.items)} transcript(s) unreadable (strict): {listed}")

    def warnings(self, *, use_timestamps: bool = True) -> dict[str, list[str]]:
        """Name -> the import warnings of each transcript read (``explain.import_warnings``), only those that have any."""
        out = {name: import_warnings(t, replayed=True, use_timestamps=use_timestamps) for name, t, _ in self.items if t is not None}
        return {name: w for name, w in out.items() if w}


def read_batch(source: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> Batch:
    """Every transcript of ``source`` (``folder_listing``): each file, each session folder, and each session of a
    file or store that holds several (an OpenHands evaluation output.jsonl, an aider chat history, Goose's
    sessions.db...), named ``FILE [ID]``.

    A file that holds several sessions is a batch of them: reading only its default session would compare
    one SWE-bench instance of an evaluation's hundreds and say nothing. Sub-agents' and empty sessions are
    left out (``session_choice.several``). A session that cannot be read is an item with its reason.
    """
    items = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    batch = Batch()
    for item in items:
        base = Path(item) if Path(item).is_dir() else None
        files, left_out = folder_listing(item)
        batch.left_out += left_out
        for f in files:
            name = f.relative_to(base).as_posix() if base is not None else str(f)
            try:
                found = several(f)
                if found is None:
                    t, error = _load(f)
                    batch.items.append((name, t, error))
                    continue
                batch.notes.append(found.describe(name))
                for info, got in read_each(f, found.reader, found.sessions):
                    named = f"{name} [{info.id}]"
                    if isinstance(got, Transcript):
                        batch.items.append((named, got, None))
                    else:
                        batch.items.append((named, None, _reason(got)))
            except Exception as e:  # noqa: BLE001 - one bad file must not end a folder run
                batch.items.append((name, None, _reason(e)))
    return batch
