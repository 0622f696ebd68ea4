"""Where the bench's real transcripts come from: ``$LAB_CORPUS`` (``lab.corpus``), and a section's skip when it is not set."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..corpus import CORPUS_ENV, corpus_dir
from ..corpus import corpus_files as _transcripts_in
from ..errors import LabError

if TYPE_CHECKING:  # pragma: no cover
    from ..core.messages import Transcript

__all__ = ["CorpusMissing", "default_corpus", "corpus_files", "sessions_of"]


class CorpusMissing(LabError):
    """No corpus is configured: the section that needs one is skipped, not failed."""


def default_corpus() -> Path:
    """The corpus folder, ``$LAB_CORPUS``; raises ``CorpusMissing`` when it is not set."""
    folder = corpus_dir()
    if folder is None:
        raise CorpusMissing(f"no corpus: set {CORPUS_ENV} to a folder of transcripts")
    if not folder.is_dir():
        # Set but wrong is a mistake to report, not a reason to skip quietly.
        raise LabError(f"{CORPUS_ENV}={folder}: not a folder")
    return folder


def corpus_files(folder: Path | None = None) -> list[Path]:
    folder = folder or default_corpus()
    if not folder.is_dir():
        raise LabError(f"corpus folder not found: {folder}")
    files = _transcripts_in(folder)
    if not files:
        raise CorpusMissing(f"no transcripts in the corpus folder {folder}")
    return files


def sessions_of(files: list[Path]) -> tuple[list[Transcript], int]:
    """The sessions ``files`` hold, as a compare or a sweep reads them (``lab.evaluation.batch.read_batch``: each
    session of a file that holds several, such as an evaluation output.jsonl, is one), and how many items there
    were: a session the importers refuse is counted, not fatal."""
    # Lazy: lab.evaluation loads numpy and the readers, and ``lab.cli`` imports this module for every verb.
    from ..evaluation.batch import read_batch

    items = read_batch(files).items
    return [t for _, t, _ in items if t is not None], len(items)
