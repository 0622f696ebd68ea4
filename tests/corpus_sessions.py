"""Every session of the corpus as (file, session id): the cells the corpus-wide replay tests run over."""

from __future__ import annotations

from pathlib import Path

from lab.errors import LabError
from lab.formats import sessions
from tests.conftest import CORPUS_FILES, corpus_id

__all__ = ["Cell", "corpus_cells", "cell_id"]

Cell = tuple[Path, str | None]


def corpus_cells() -> list[Cell]:
    """(file, session id) for every session in the corpus; None for a file holding one."""
    out: list[Cell] = []
    for path in CORPUS_FILES:
        try:
            listed = sessions(path)
        except LabError:
            listed = []  # a file that lists no sessions is read whole
        out += [(path, s.id) for s in listed] if len(listed) > 1 else [(path, None)]
    return out


def cell_id(cell: Cell) -> str:
    return corpus_id(cell[0]) + (f"#{cell[1]}" if cell[1] is not None else "")
