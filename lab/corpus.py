"""The folder of real transcripts that the tests, the bench and the app read: ``$LAB_CORPUS``.

Nothing is assumed to sit beside the checkout. Without the variable there is
no corpus, and each reader says so: the tests skip with a reason (they fail
when ``LAB_REQUIRE_CORPUS=1``), the bench skips its corpus sections, and the
app lists only ``sample_sessions/``.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CORPUS_ENV", "corpus_dir", "corpus_files"]

CORPUS_ENV = "LAB_CORPUS"


def corpus_dir() -> Path | None:
    """``$LAB_CORPUS`` as an absolute path (relative to the working directory), or None when unset."""
    value = os.environ.get(CORPUS_ENV, "").strip()
    return Path(value).expanduser().resolve() if value else None


def corpus_files(folder: Path) -> list[Path]:
    """Every transcript under ``folder``, at any depth, sorted.

    Markdown (SOURCES.md, READMEs) describes the corpus and hidden files are
    editor or OS litter (``.DS_Store``, a half-written ``.x.tmp``): neither is a transcript.
    """
    if not folder.is_dir():
        return []
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and p.suffix.lower() != ".md" and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )
