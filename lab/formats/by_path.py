"""Inputs found by their path rather than by sniffing one file's content: agent session folders and stores.

``load`` and ``sessions`` try these, in this order, before detection:

    openhands_v1  an OpenHands V1 conversation folder (one JSON file per event)
    cline         a Cline / Roo Code task folder
    opencode      OpenCode storage: a session's ``storage/message/<id>`` folder, the
                  storage root or its data dir, a session info file, or ``opencode.db``
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..core.messages import Transcript
from . import cline, opencode, opencode_storage, openhands_v1

__all__ = ["path_format", "read_by_path"]

# (format, whether the path is one, how to read it), in the order they are tried.
_BY_PATH: tuple[tuple[str, Callable[[Path], bool], Callable[[Path], Transcript]], ...] = (
    (openhands_v1.NAME, lambda p: p.is_dir() and bool(openhands_v1.event_files(p)), openhands_v1.read_folder),
    (cline.NAME, lambda p: p.is_dir() and bool(cline.task_files(p)), cline.read_folder),
    (opencode.NAME, opencode_storage.is_storage, opencode_storage.read_folder),
)


def path_format(path: Path, format: str | None = None) -> str | None:
    """The first format that finds ``path`` by its path (only ``format``, when given), else None."""
    return next((name for name, found, _ in _BY_PATH if format in (None, name) and found(path)), None)


def read_by_path(name: str, path: Path) -> Transcript:
    """Read ``path`` as the by-path format ``name`` (one ``path_format`` found), unchecked."""
    return next(read for known, _, read in _BY_PATH if known == name)(path)
