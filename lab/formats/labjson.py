"""The lab's own transcript file: ``{"lab_transcript": 1, ...Transcript fields}``.

It is ``Transcript.model_dump(mode="json")`` with a version key in front, so
it keeps everything an importer produced (sidechains, notes, compaction
markers) and reading it back gives an equal transcript: ``from_dict(to_dict(t))
== t``. A newer version number is refused rather than half-read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..atomic import write_text_atomic
from ..core.messages import Transcript
from ..errors import TranscriptError
from .jsonio import read_json
from .registry import FileHead, Format, REQUEST_BODIES

__all__ = ["FORMAT", "VERSION", "VERSION_KEY", "to_dict", "from_dict", "dumps", "write", "read", "sniff"]

VERSION_KEY = "lab_transcript"
VERSION = 1


def to_dict(transcript: Transcript) -> dict[str, Any]:
    return {VERSION_KEY: VERSION, **transcript.model_dump(mode="json")}


def dumps(transcript: Transcript, *, indent: int | None = 1) -> str:
    return json.dumps(to_dict(transcript), ensure_ascii=False, indent=indent)


def write(transcript: Transcript, path: str | os.PathLike[str]) -> Path:
    """Write the transcript as lab JSON; the file appears complete or not at all."""
    target = Path(path)
    try:
        write_text_atomic(target, dumps(transcript))
    except OSError as exc:
        raise TranscriptError(f"cannot write: {exc.strerror or exc}", file=str(target)) from None
    return target


def _where(err: ValidationError) -> str:
    loc = err.errors()[0]["loc"]
    path = "$"
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def from_dict(data: Any, *, file: str | None = None) -> Transcript:
    if not isinstance(data, dict):
        raise TranscriptError("top level is not an object", file=file, where="$", expected=f"an object with '{VERSION_KEY}'")
    version = data.get(VERSION_KEY)
    if type(version) is not int or version != VERSION:
        raise TranscriptError(
            f"unsupported {VERSION_KEY} version {version!r}", file=file, where=f"$.{VERSION_KEY}", expected=str(VERSION)
        )
    body = {k: v for k, v in data.items() if k != VERSION_KEY}
    try:
        return Transcript.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise TranscriptError(f"{first['msg']}{more}", file=file, where=_where(exc), expected="a lab transcript") from None


def read(path: Path) -> Transcript:
    return from_dict(read_json(path), file=str(path))


def sniff(probe: FileHead) -> int:
    doc = probe.document
    if isinstance(doc, dict):
        return 100 if VERSION_KEY in doc else 0
    if probe.document is None and probe.shape == "json":
        # Large files: the version key is written first, so it is in the head.
        return 95 if f'"{VERSION_KEY}"' in probe.head[:200] else 0
    return 0


FORMAT = Format(name="lab", description="The lab's own transcript JSON (lossless)", sniff=sniff, read=read, more_specific_than=REQUEST_BODIES)

