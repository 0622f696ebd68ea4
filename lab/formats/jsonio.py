"""Reading JSON and JSONL transcripts with errors that point at the problem.

Transcripts can be hundreds of megabytes, so JSONL is streamed: each line is
decoded and parsed on its own and handed over before the next one is read.
Every failure becomes a ``TranscriptError`` carrying the file, the line (or
line and column) and what the reader expected there.

``make_probe`` builds the ``Probe`` detection works from: the first 64 KiB as
text, plus the first JSONL records or, for small files, the whole document.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from ..core.messages import ImportNotes
from ..errors import TranscriptError
from .registry import Probe

__all__ = [
    "HEAD_BYTES",
    "SMALL_DOCUMENT_BYTES",
    "iter_jsonl",
    "iter_jsonl_lines",
    "iter_log_lines",
    "TRUNCATED",
    "read_json",
    "parse_json_text",
    "make_probe",
    "check_file",
    "leading_char",
]

HEAD_BYTES = 64 * 1024
# A single document up to this size is parsed whole while probing; beyond it, sniffers use the head.
SMALL_DOCUMENT_BYTES = 1024 * 1024
# A probe reads at most this much of one JSONL line, so a huge single-line document is never read
# whole just to detect its format.
_PROBE_LINE_CAP = 8 * 1024 * 1024
_PROBE_RECORDS = 20
_BOM = b"\xef\xbb\xbf"
# The decoder ``json.loads`` uses (same settings); its ``raw_decode`` is called directly on the
# fast path, skipping the wrapper's whitespace regexes and two Python frames per line.
_DECODER = json.JSONDecoder()
_LINE_ENDS = ("\n", "\r\n")


def check_file(path: str | os.PathLike[str]) -> Path:
    """The path as a ``Path``, or a TranscriptError when it is not a readable file."""
    p = Path(path)
    if not p.exists():
        raise TranscriptError("no such file", file=str(p))
    if p.is_dir():
        raise TranscriptError("is a directory, not a transcript file", file=str(p))
    if not p.is_file():
        raise TranscriptError("not a regular file", file=str(p))
    return p


def _open(path: Path) -> BinaryIO:
    try:
        return open(path, "rb")
    except OSError as exc:
        raise TranscriptError(f"cannot open: {exc.strerror or exc}", file=str(path)) from None


def _decode(raw: bytes, file: str, where: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = raw[exc.start : exc.start + 1].hex()
        raise TranscriptError(
            f"not UTF-8 text (byte 0x{bad} at offset {exc.start})",
            file=file,
            where=where,
            expected="UTF-8 encoded JSON",
        ) from None


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"


# The start of the reason a TranscriptError gives for a last line the writer stopped in mid-record.
TRUNCATED = "truncated last line"


def iter_jsonl_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_no, value)`` for every non-blank line, whatever JSON value it holds.

    Streams the file once. Raises on an empty file, bytes that are not UTF-8,
    a line that is not JSON, and says so when the broken line is a truncated
    last line (a writer that died mid-record).
    """
    return _iter_lines(path, objects=False)


def iter_log_lines(path: str | os.PathLike[str], notes: ImportNotes) -> Iterator[tuple[int, Any]]:
    """``iter_jsonl_lines`` for a log an agent may still be writing, counting each line in ``notes.records_read``.

    A last line cut off mid-record, after at least one whole line, ends the
    stream with a warning: what was written before it still stands.
    """
    lines = iter_jsonl_lines(path)
    while True:
        try:
            line_no, record = next(lines)
        except StopIteration:
            return
        except TranscriptError as exc:
            if notes.records_read and exc.reason.startswith(TRUNCATED):
                notes.warnings.append(f"{exc.where}: last line cut off mid-record (log still being written?); ignored")
                return
            raise
        notes.records_read += 1
        yield line_no, record


def iter_jsonl(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_no, object)`` for every record of a JSONL file; every line must be an object."""
    return _iter_lines(path, objects=True)


def _iter_lines(path: str | os.PathLike[str], *, objects: bool) -> Iterator[tuple[int, Any]]:
    # One generator for both readers: importers pay a Python frame switch per line for every
    # wrapping generator, which is measurable next to json.loads on short lines.
    p = check_file(path)
    file = str(p)
    seen_any = False
    raw_decode = _DECODER.raw_decode
    with _open(p) as fh:
        for line_no, raw in enumerate(fh, start=1):
            if line_no == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM) :]
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text = _decode(raw, file, f"line {line_no}")  # raises, saying where
            # The fast path takes a line that is one JSON value from its first character to its
            # line end: that is exactly ``json.loads(text.strip())``. Anything else (blank lines,
            # surrounding spaces, broken JSON) goes through the slow path, which strips the line
            # and reports errors as before.
            try:
                value, end = raw_decode(text)
                clean = end == len(text) or text[end:] in _LINE_ENDS
            except (json.JSONDecodeError, RecursionError):
                clean = False
            if not clean:
                stripped = text.strip()
                if not stripped:
                    continue
                value = _parse_line(stripped, raw, file, line_no)
            seen_any = True
            if objects and not isinstance(value, dict):
                raise TranscriptError(
                    f"line holds {_kind(value)}, not an object",
                    file=file,
                    where=f"line {line_no}",
                    expected="one JSON object per line",
                )
            yield line_no, value
    if not seen_any:
        raise TranscriptError("empty file", file=file, expected="at least one JSON record")


def _parse_line(stripped: str, raw: bytes, file: str, line_no: int) -> Any:
    """Parse a line the fast path refused, or raise the error saying why it is not JSON."""
    try:
        return json.loads(stripped)
    except json.JSONDecodeError as exc:
        # Only the file's final line can lack its newline; a parse that ran off its end
        # means the writer stopped mid-record.
        last_line = not raw.endswith(b"\n")
        ran_off = exc.pos >= len(stripped) - 1 or exc.msg.startswith("Unterminated")
        if last_line and ran_off:
            raise TranscriptError(
                f"{TRUNCATED} (the record ends mid-value)",
                file=file,
                where=f"line {line_no}",
                expected="a complete JSON object",
            ) from None
        raise TranscriptError(
            f"not JSON: {exc.msg} at column {exc.colno}",
            file=file,
            where=f"line {line_no}",
            expected="one JSON object per line",
        ) from None
    except RecursionError:
        raise TranscriptError(
            "JSON nested too deeply", file=file, where=f"line {line_no}", expected="one JSON object per line"
        ) from None


def parse_json_text(text: str, *, file: str | None = None) -> Any:
    """Parse one JSON document, reporting a failure with its line and column."""
    if not text.strip():
        raise TranscriptError("empty file", file=file, expected="a JSON document")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TranscriptError(
            f"not JSON: {exc.msg}",
            file=file,
            where=f"line {exc.lineno} column {exc.colno}",
            expected="a JSON document",
        ) from None
    except RecursionError:
        raise TranscriptError("JSON nested too deeply", file=file, expected="a JSON document") from None


def read_json(path: str | os.PathLike[str]) -> Any:
    """Read one JSON document (a UTF-8 BOM is accepted)."""
    p = check_file(path)
    with _open(p) as fh:
        raw = fh.read()
    if raw.startswith(_BOM):
        raw = raw[len(_BOM) :]
    return parse_json_text(_decode(raw, str(p), "whole file"), file=str(p))


def leading_char(path: str | os.PathLike[str]) -> str:
    """The first character of the file after a BOM and whitespace ('' when the head holds none).

    What ``make_probe(path).head.lstrip()[:1]`` gives, and the same errors, without
    parsing any record: enough for a reader choosing between an array and JSONL.
    """
    p = check_file(path)
    if p.stat().st_size == 0:
        raise TranscriptError("empty file", file=str(p), expected="a transcript")
    with _open(p) as fh:
        head_raw = fh.read(HEAD_BYTES)
    offset = len(_BOM) if head_raw.startswith(_BOM) else 0
    return _first_char(head_raw[offset:].decode("utf-8", errors="replace"))


def _first_char(text: str) -> str:
    stripped = text.lstrip()
    return stripped[:1]


def _probe_lines(fh: BinaryIO) -> tuple[list[dict[str, Any]], bool]:
    """Parse the first JSONL records: (records, whether anything follows the first record).

    ``records`` is empty when the first line is not a complete JSON object.
    """
    records: list[dict[str, Any]] = []
    more = False
    used = 0
    while True:
        raw = fh.readline(_PROBE_LINE_CAP)
        if not raw:
            break
        if not raw.strip():
            continue
        if records:
            # Anything after the first record makes this JSONL, even a later line that is cut off.
            more = True
            if len(records) >= _PROBE_RECORDS or used > SMALL_DOCUMENT_BYTES:
                break
        if len(raw) >= _PROBE_LINE_CAP and not raw.endswith(b"\n"):
            break
        try:
            value = json.loads(raw.decode("utf-8", errors="replace"))
        except (json.JSONDecodeError, RecursionError):
            break
        if not isinstance(value, dict):
            break
        records.append(value)
        used += len(raw)
    return records, more


def make_probe(path: str | os.PathLike[str]) -> Probe:
    """What detection looks at: the head of the file and its first parsed records or document."""
    p = check_file(path)
    size = p.stat().st_size
    if size == 0:
        raise TranscriptError("empty file", file=str(p), expected="a transcript")
    with _open(p) as fh:
        head_raw = fh.read(HEAD_BYTES)
        offset = len(_BOM) if head_raw.startswith(_BOM) else 0
        head = head_raw[offset:].decode("utf-8", errors="replace")
        start = _first_char(head)
        if start not in ("{", "["):
            return Probe(path=p, head=head, shape="unknown", records=None, document=None)
        if size <= SMALL_DOCUMENT_BYTES:
            fh.seek(0)
            whole = fh.read()[offset:].decode("utf-8", errors="replace")
            try:
                document = json.loads(whole)
            except (json.JSONDecodeError, RecursionError):
                document = None
            else:
                single_line = "\n" not in whole.strip()
                records = [document] if single_line and isinstance(document, dict) else None
                return Probe(path=p, head=head, shape="json", records=records, document=document)
        fh.seek(offset)
        records, more = _probe_lines(fh)
    if records and more:
        return Probe(path=p, head=head, shape="jsonl", records=records, document=None)
    if records:
        # One complete object and nothing after it: a one-record JSONL file is one JSON document.
        return Probe(path=p, head=head, shape="json", records=records, document=records[0])
    return Probe(path=p, head=head, shape="json", records=None, document=None)
