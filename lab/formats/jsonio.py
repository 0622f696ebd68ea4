"""Reading JSON and JSONL transcripts with errors that point at the problem.

Transcripts can be hundreds of megabytes, so JSONL is streamed: each line is
decoded and parsed on its own and handed over before the next one is read.
Every failure becomes a ``TranscriptError`` carrying the file, the line (or
line and column) and what the reader expected there.

Parsing: msgspec's JSON decoder reads every line (and document) first, straight
from its bytes. It is strict JSON, and where it accepts input it gives the
values ``json.loads`` gives (integers of any size included, which orjson would
silently turn into floats). Whatever it refuses (``NaN``, lone surrogates, a
BOM, blank lines, broken JSON) is handed to the stdlib ``json`` path, which
decides: it accepts what ``json.loads`` always accepted and words the errors.
``iter_jsonl_as`` decodes each line into a reader's msgspec Struct instead, so
the keys it never reads are skipped unbuilt; a line the Struct cannot take
comes through as the dict the plain reader gives.

Live files: a log an agent is still writing usually ends in a line cut off
mid-record. Readers given ``notes`` stop before such a line with a warning, so
everything written before it imports; without ``notes`` it is an error. A
broken line anywhere else is always an error naming its line.

``gc_paused`` (``lab.core.gcpause``, re-exported here) is the context an importer runs a whole
import in: an import keeps every container it makes, so the collector would only traverse a growing heap.

``make_probe`` builds the ``Probe`` detection works from: the first 64 KiB as
text, plus the first JSONL records or, for small files, the whole document.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import msgspec

from ..core.gcpause import gc_paused
from ..core.messages import ImportNotes
from ..errors import TranscriptError
from .registry import Probe

__all__ = [
    "HEAD_BYTES",
    "SMALL_DOCUMENT_BYTES",
    "iter_jsonl",
    "iter_jsonl_as",
    "iter_jsonl_lines",
    "iter_log_lines",
    "TRUNCATED",
    "gc_paused",
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
# The line readers' file buffer. With the default 8 KiB, iterating the lines of a session (a few KB
# each, some far longer) costs a read call and a copy per buffer's worth; 64 KiB made reading the
# lines about 3x cheaper (some 5-10% of a Claude Code import). Larger buffers gain little more and
# are memory held whatever the file's size.
_LINE_BUFFER = 64 * 1024
# The fast parser: untyped, so it yields the dict/list/str/int/float/bool/None values json.loads
# does. It reads bytes and checks UTF-8 itself, so a line is never decoded to str first.
_FAST = msgspec.json.Decoder()
# A reader's Struct; ``iter_jsonl_as`` makes one typed decoder per Struct and keeps it.
_S = TypeVar("_S", bound=msgspec.Struct)


@functools.cache
def _typed_decoder(shape: type[msgspec.Struct]) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(shape)


# What the fast parser raises for input it refuses (ValidationError, for numbers out of float
# range, is a subclass); RecursionError for nesting beyond its limit.
_REFUSED = (msgspec.DecodeError, RecursionError)
# What is left of a line after the point where json gave up, when the writer stopped inside a
# token: a literal (``tr``, ``Na``, ``-Inf``), a number's sign or the start of its fraction or
# exponent (``-``, ``.``, ``e-``), or a \uXXXX escape (``ud8``, ``ud83d\``). Anything longer is
# a line that is wrong before its end, not one cut off.
_PARTIAL_TOKEN = re.compile(
    r"-?(?:I(?:n(?:f(?:i(?:n(?:it?)?)?)?)?)?)?|\.|[eE][-+]?|t(?:ru?)?|f(?:a(?:ls?)?)?|n(?:ul?)?|Na?|u[0-9a-fA-F]{0,4}\\?"
)


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


def _open(path: Path, buffering: int = -1) -> BinaryIO:
    try:
        return open(path, "rb", buffering=buffering)
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


def iter_jsonl_lines(path: str | os.PathLike[str], *, notes: ImportNotes | None = None) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_no, value)`` for every non-blank line, whatever JSON value it holds.

    Streams the file once. Raises on an empty file, bytes that are not UTF-8,
    a line that is not JSON, and says so when the broken line is a truncated
    last line (a writer that died mid-record). Given ``notes``, such a last
    line after at least one whole line ends the stream with a warning instead.
    """
    return _iter_lines(path, objects=False, notes=notes)


def iter_log_lines(path: str | os.PathLike[str], notes: ImportNotes) -> Iterator[tuple[int, Any]]:
    """``iter_jsonl_lines`` for a log an agent may still be writing, counting each line in ``notes.records_read``.

    A last line cut off mid-record, after at least one whole line, ends the
    stream with a warning: what was written before it still stands.
    """
    for line_no, record in _iter_lines(path, objects=False, notes=notes):
        notes.records_read += 1
        yield line_no, record


def iter_jsonl(path: str | os.PathLike[str], *, notes: ImportNotes | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_no, object)`` for every record of a JSONL file; every line must be an object.

    Given ``notes``, a last line cut off mid-record (a session still being
    written) ends the stream with a warning in ``notes.warnings``.
    """
    return _iter_lines(path, objects=True, notes=notes)


def iter_jsonl_as(
    path: str | os.PathLike[str], shape: type[_S], *, notes: ImportNotes | None = None
) -> Iterator[tuple[int, _S | dict[str, Any]]]:
    """``iter_jsonl``, each record decoded straight into the msgspec Struct ``shape`` when it fits.

    Why: a reader that looks at a few of a record's keys pays, with plain dicts, for building every
    value it never reads; decoding into a Struct of only those fields lets msgspec skip the rest in
    C. A line the Struct cannot take (``msgspec.ValidationError``: not an object, a field of another
    shape, a number out of range) or that the strict parser refuses is read as ``iter_jsonl`` reads
    it and yielded as that dict, so the caller still gets everything the line holds. Skipped values
    are checked as JSON but never built, so bytes that are not UTF-8 inside a skipped field pass
    unread, where the dict reader stops at them.
    """
    return _iter_lines(path, objects=True, notes=notes, shape=shape)


def _iter_lines(
    path: str | os.PathLike[str], *, objects: bool, notes: ImportNotes | None, shape: type[msgspec.Struct] | None = None
) -> Iterator[tuple[int, Any]]:
    # One generator for every reader: importers pay a Python frame switch per line for every
    # wrapping generator, which is measurable next to the parser on short lines.
    p = check_file(path)
    file = str(p)
    seen_any = False
    decode = _FAST.decode if shape is None else _typed_decoder(shape).decode
    with _open(p, _LINE_BUFFER) as fh:
        for line_no, raw in enumerate(fh, start=1):
            # The fast path: a line the strict parser takes whole (surrounding JSON whitespace and
            # the line end included) is exactly what ``json.loads`` would give for it.
            try:
                value = decode(raw)
            except _REFUSED:
                value = _UNREAD
                if shape is not None:
                    # The typed reader's dict path: the line as the plain reader reads it.
                    with contextlib.suppress(*_REFUSED):
                        value = _FAST.decode(raw)
                if value is _UNREAD:
                    try:
                        value = _slow_line(raw, file, line_no)
                    except TranscriptError as exc:
                        if notes is None or not seen_any or not exc.reason.startswith(TRUNCATED):
                            raise
                        notes.warnings.append(f"{exc.where}: last line cut off mid-record (log still being written?); ignored")
                        return
                    if value is _BLANK:
                        continue
            seen_any = True
            # The typed reader's Struct first: nearly every line of such a file decodes into it.
            if type(value) is not shape and objects and type(value) is not dict:
                raise TranscriptError(
                    f"line holds {_kind(value)}, not an object",
                    file=file,
                    where=f"line {line_no}",
                    expected="one JSON object per line",
                )
            yield line_no, value
    if not seen_any:
        raise TranscriptError("empty file", file=file, expected="at least one JSON record")


# What ``_slow_line`` returns for a line holding nothing but whitespace.
_BLANK: Any = object()
# A refused line not parsed yet.
_UNREAD: Any = object()


def _slow_line(raw: bytes, file: str, line_no: int) -> Any:
    """A line the fast parser refused: parsed as ``json.loads`` would, or the error saying why not."""
    if line_no == 1 and raw.startswith(_BOM):
        raw = raw[len(_BOM) :]
    # Only the file's final line can lack its newline.
    last_line = not raw.endswith(b"\n")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if last_line and exc.end == len(raw) and exc.reason == "unexpected end of data":
            # The writer stopped inside a multi-byte character.
            raise TranscriptError(
                f"{TRUNCATED} (the record ends mid-character)", file=file, where=f"line {line_no}", expected="a complete JSON object"
            ) from None
        text = _decode(raw, file, f"line {line_no}")  # raises, saying where
    stripped = text.strip()
    if not stripped:
        return _BLANK
    return _parse_line(stripped, last_line, file, line_no)


def _ran_off(stripped: str, exc: json.JSONDecodeError) -> bool:
    """Whether json gave up only because the text ended: the text is the start of some JSON value."""
    if exc.pos >= len(stripped) or exc.msg.startswith("Unterminated"):
        return True
    return _PARTIAL_TOKEN.fullmatch(stripped, exc.pos) is not None


def _parse_line(stripped: str, last_line: bool, file: str, line_no: int) -> Any:
    """Parse a line the fast path refused, or raise the error saying why it is not JSON."""
    try:
        return json.loads(stripped)
    except json.JSONDecodeError as exc:
        if last_line and _ran_off(stripped, exc):
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
    try:
        return _FAST.decode(raw)
    except _REFUSED:
        pass  # json decides, and words the error
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
