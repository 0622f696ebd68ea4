"""The folder of real transcripts that the tests, the bench and the app read: ``$LAB_CORPUS``.

Nothing is assumed to sit beside the checkout. Without the variable there is
no corpus, and each reader says so: the tests skip with a reason (they fail
when ``LAB_REQUIRE_CORPUS=1``), the bench skips its corpus sections, and the
app lists only ``sample_sessions/``.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

__all__ = ["CORPUS_ENV", "corpus_dir", "corpus_files"]

CORPUS_ENV = "LAB_CORPUS"


def corpus_dir() -> Path | None:
    """``$LAB_CORPUS`` as an absolute path (relative to the working directory), or None when unset."""
    value = os.environ.get(CORPUS_ENV, "").strip()
    return Path(value).expanduser().resolve() if value else None


def corpus_files(folder: Path) -> list[Path]:
    """Every transcript under ``folder``, at any depth, sorted, found as a folder of sessions is walked.

    The walk is ``lab.formats.containers.session_folder.walk``, the one ``python -m lab sessions`` and ``compare``
    use: a session kept as a folder (an OpenHands V1 conversation, a Cline task) is one transcript, not
    its files; hidden entries (``.DS_Store``, a half-written ``.x.tmp``) and links are passed over.
    Markdown (SOURCES.md, READMEs) describes the corpus and is left out too.
    """
    # Lazy: the format readers load only when a corpus is walked; ``lab.cli`` imports this module for every verb.
    from .formats.containers.session_folder import walk

    if not folder.is_dir():
        return []
    return sorted(p for p, is_folder in walk(folder, Counter(), limit=0) if is_folder or p.suffix.lower() != ".md")
