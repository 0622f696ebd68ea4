"""The format registry: each importer module registers a ``Format``.

Detection reads only the start of a file (``Probe``): the first bytes, the
first parsed JSON value or JSONL record. Each format scores it; the best
positive score wins. Importers then stream the file themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.messages import Transcript

__all__ = ["Probe", "Format", "FORMATS", "register"]


@dataclass(frozen=True)
class Probe:
    path: Path
    # Up to the first 64 KiB of the file, decoded as UTF-8 (errors replaced).
    head: str
    # "jsonl" when the first line is a complete JSON object and more lines follow, "json" for one
    # document, "unknown" otherwise.
    shape: str
    # The first JSONL records (up to 20), or the top-level JSON value when the file is one small
    # document (None for large single documents, which formats must sniff from ``head``).
    records: list[Any] | None
    document: Any | None

    def first_value(self) -> Any | None:
        """The first JSONL record, else the parsed document; None when only ``head`` was read."""
        if self.records:
            return self.records[0]
        return self.document


@dataclass(frozen=True)
class Format:
    name: str
    description: str
    # Returns a confidence in 0..100 (0 = not this format).
    sniff: Callable[[Probe], int]
    read: Callable[[Path], Transcript]


FORMATS: dict[str, Format] = {}


def register(fmt: Format) -> Format:
    FORMATS[fmt.name] = fmt
    return fmt
