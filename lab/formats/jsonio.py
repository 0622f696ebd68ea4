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

``read_file_head`` builds the ``FileHead`` detection works from: the first 64 KiB as
text, plus the first JSONL records or, for small files, the whole document.
A file is JSONL when its first line is a whole JSON object and another line
follows, however long that first line is (``is_jsonl``). UTF-16 text (a BOM,
or the zero bytes of ASCII written in it) is named as such by every reader
here ("not UTF-8" alone left users guessing); ``lab.formats.load`` reads such
a file by transcoding it to UTF-8 first (``transcode_utf16``).

Strings no encoder can write: a lone UTF-16 surrogate (the JSON escape
``\ud800`` with no partner, which some tools write) and NUL (``\u0000``) parse
fine but make every later write (a report, a dump, an export) fail with a
``UnicodeEncodeError`` traceback, or cut C strings short. The readers here
replace each with U+FFFD as they parse, and count them in the ``repairs``
tally, which ``lab.formats.detect.read_as`` turns into one warning in the
transcript's notes. They pay only for lines that hold such an escape: a lone
surrogate is refused by the fast parser anyway, and a NUL is one bytes search
per line.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import msgspec

from ..core.gcpause import gc_paused
from ..core.messages import ImportNotes, Transcript
from ..errors import TranscriptError
from .registry import FileHead

__all__ = [
    "with_repair_note",
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
    "read_file_head",
    "check_file",
    "leading_char",
    "is_jsonl",
    "utf16_of",
    "utf16_file",
    "transcode_utf16",
    "clean_strings",
    "repairs",
    "repair_note",
]

HEAD_BYTES = 64 * 1024
# A single document up to this size is parsed whole while probing; beyond it, sniffers use the head.
SMALL_DOCUMENT_BYTES = 1024 * 1024
# A probe reads at most this much of one JSONL line, so a huge single-line document is never read
# whole just to detect its format.
_PROBE_LINE_CAP = 8 * 1024 * 1024
_PROBE_RECORDS = 20
_BOM = b"\xef\xbb\xbf"
# A first JSONL line longer than this is not parsed while probing unless another line follows it.
_SCAN_CHUNK = 1024 * 1024
# The JSON escapes of the strings ``clean_strings`` replaces: NUL, and any UTF-16 surrogate (a lone one
# survives parsing; a valid pair is joined into one character and is left alone).
_NUL_ESCAPE = b"\\u0000"
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_UNWRITABLE = re.compile("[\ud800-\udfff\x00]")
_REPLACEMENT = "\ufffd"
# The tally of the import in progress (``repairs``); None outside one, where strings are still replaced.
_TALLY: ContextVar[Counter[str] | None] = ContextVar("lab_jsonio_repairs", default=None)
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


def _replace(match: re.Match[str]) -> str:
    tally = _TALLY.get()
    if tally is not None:
        tally["NUL character" if match.group() == "\x00" else "lone UTF-16 surrogate"] += 1
    return _REPLACEMENT


def _clean_str(text: str) -> str:
    return _UNWRITABLE.sub(_replace, text) if _UNWRITABLE.search(text) else text


def clean_strings(value: Any) -> Any:
    """``value`` with every lone surrogate and NUL in its strings (keys too) replaced by U+FFFD, counted in ``repairs``.

    Called only on values whose raw JSON holds such an escape, so rebuilding the containers is rare.
    """
    if isinstance(value, str):
        return _clean_str(value)
    if isinstance(value, list):
        return [clean_strings(v) for v in value]
    if isinstance(value, dict):
        return {_clean_str(k) if isinstance(k, str) else k: clean_strings(v) for k, v in value.items()}
    return value


def _dirty(raw: bytes) -> bool:
    """Whether raw JSON may hold a string ``clean_strings`` would change (a NUL or surrogate escape)."""
    return _NUL_ESCAPE in raw or _SURROGATE_ESCAPE.search(raw) is not None


@contextlib.contextmanager
def repairs() -> Iterator[Counter[str]]:
    """Count, in the Counter it yields, the strings the readers repair while the block runs (a fresh tally)."""
    tally: Counter[str] = Counter()
    token = _TALLY.set(tally)
    try:
        yield tally
    finally:
        _TALLY.reset(token)


def repair_note(tally: Counter[str]) -> str | None:
    """The warning an import's ``repairs`` tally makes, or None when nothing was replaced."""
    if not tally:
        return None
    counts = " and ".join(f"{n} {kind}{'s' if n != 1 else ''}" for kind, n in sorted(tally.items()))
    return f"replaced {counts} with U+FFFD (text no encoder can write)"


def with_repair_note(read: Callable[[], Transcript]) -> Transcript:
    """``read()``, with a warning when its JSON held strings the readers replaced (``jsonio.repairs``).

    Detected and forced reads count their own (``detect.read_as``); this covers the readers
    chosen by path or by session, which do not go through it.
    """
    with repairs() as tally:
        transcript = read()
    note = repair_note(tally)
    if note is not None and note not in transcript.notes.warnings:
        transcript.notes.warnings.append(note)
    return transcript


def utf16_of(head: bytes) -> str | None:
    """``"UTF-16 LE"`` or ``"UTF-16 BE"`` (followed by ``" (with BOM)"``) when these first bytes are UTF-16 text, else None.

    Without a BOM, JSON or ASCII text in UTF-16 shows as a zero byte beside each character.
    """
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) and not head.startswith(b"\xff\xfe\x00\x00"):
        return f"UTF-16 {'LE' if head[0] == 0xFF else 'BE'} (with BOM)"
    pairs = head[:64]
    if len(pairs) >= 4:
        even, odd = pairs[0::2], pairs[1::2]
        if not odd.strip(b"\x00") and even.strip(b"\x00"):
            return "UTF-16 LE"
        if not even.strip(b"\x00") and odd.strip(b"\x00"):
            return "UTF-16 BE"
    return None


def utf16_file(path: Path) -> str | None:
    """``utf16_of`` the file's first bytes (None for a file that cannot be opened: its reader says why)."""
    try:
        with open(path, "rb") as fh:
            return utf16_of(fh.read(64))
    except OSError:
        return None


def transcode_utf16(src: Path, dest: Path, encoding: str) -> None:
    """Write the UTF-16 text of ``src`` to ``dest`` as UTF-8, in chunks; lone surrogates are replaced and counted.

    ``encoding`` is what ``utf16_of`` said: with a BOM the codec reads it (and drops it), without
    one the byte order it saw is used. Line ends are kept as they are.
    """
    codec = "utf-16" if "BOM" in encoding else ("utf-16-le" if "LE" in encoding else "utf-16-be")
    try:
        with open(src, encoding=codec, errors="surrogatepass", newline="") as fin, open(dest, "w", encoding="utf-8", newline="") as fout:
            while chunk := fin.read(_SCAN_CHUNK):
                fout.write(_clean_str(chunk))
    except UnicodeDecodeError as exc:
        raise TranscriptError(f"not valid {encoding} text (at byte {exc.start})", file=str(src), expected="UTF-16 or UTF-8 text") from None
    except OSError as exc:
        raise TranscriptError(f"cannot read: {exc.strerror or exc}", file=str(src)) from None


def _utf16_error(encoding: str, file: str) -> TranscriptError:
    return TranscriptError(
        f"the file is {encoding} text, not UTF-8",
        file=file,
        expected="UTF-8 text; convert it first, e.g. iconv -f UTF-16 -t UTF-8",
    )


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
                # A NUL parses: such a line is read as the plain reader's dict (every reader takes one), cleaned.
                value = clean_strings(_FAST.decode(raw)) if _NUL_ESCAPE in raw else decode(raw)
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
    if line_no == 1 and (encoding := utf16_of(raw)) is not None:
        raise _utf16_error(encoding, file)
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
    value = _parse_line(stripped, last_line, file, line_no)
    return clean_strings(value) if _dirty(raw) else value


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
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TranscriptError(
            f"not JSON: {exc.msg}",
            file=file,
            where=f"line {exc.lineno} column {exc.colno}",
            expected="a JSON document",
        ) from None
    except RecursionError:
        raise TranscriptError("JSON nested too deeply", file=file, expected="a JSON document") from None
    return clean_strings(value) if "\\u" in text or "\x00" in text else value


def read_json(path: str | os.PathLike[str]) -> Any:
    """Read one JSON document (a UTF-8 BOM is accepted)."""
    p = check_file(path)
    with _open(p) as fh:
        raw = fh.read()
    if raw.startswith(_BOM):
        raw = raw[len(_BOM) :]
    elif (encoding := utf16_of(raw[:64])) is not None:
        raise _utf16_error(encoding, str(p))
    try:
        value = _FAST.decode(raw)
    except _REFUSED:
        pass  # json decides, and words the error
    else:
        return clean_strings(value) if _NUL_ESCAPE in raw else value
    return parse_json_text(_decode(raw, str(p), "whole file"), file=str(p))


def leading_char(path: str | os.PathLike[str]) -> str:
    """The first character of the file after a BOM and whitespace ('' when the head holds none).

    What ``read_file_head(path).head.lstrip()[:1]`` gives, and the same errors, without
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


def _line_end(fh: BinaryIO) -> int:
    """Read on to the end of the current line, holding no more than a chunk; the offset after it."""
    while True:
        chunk = fh.readline(_SCAN_CHUNK)
        if not chunk or chunk.endswith(b"\n"):
            return fh.tell()


def _line_follows(fh: BinaryIO) -> bool:
    """Whether a non-blank line follows the current position."""
    while True:
        raw = fh.readline(_SCAN_CHUNK)
        if not raw:
            return False
        if raw.strip():
            return True
        if not raw.endswith(b"\n"):
            # A run of whitespace longer than a chunk: read on.
            continue


def _long_first_line(fh: BinaryIO, start: int) -> bytes | None:
    """The whole first line, beyond the probe's cap, when another line follows it (the file is JSONL); else None.

    Why: a JSONL file may begin with a record of many megabytes (a pasted log, an image); probed up
    to the cap only, it looked like one large document and every JSONL reader refused it. A single
    huge document is scanned to its end once, in chunks, and never held.
    """
    end = _line_end(fh)
    if not _line_follows(fh):
        return None
    fh.seek(start)
    raw = fh.read(end - start)
    fh.seek(end)
    return raw


def _object_of(raw: bytes) -> dict[str, Any] | None:
    """The JSON object a probed line holds, or None (broken, cut off, not an object)."""
    try:
        value = _FAST.decode(raw)
    except _REFUSED:
        try:
            value = json.loads(raw.decode("utf-8", errors="replace"))
        except (json.JSONDecodeError, RecursionError):
            return None
    return value if isinstance(value, dict) else None


def _probe_lines(fh: BinaryIO) -> tuple[list[dict[str, Any]], bool]:
    """Parse the first JSONL records: (records, whether anything follows the first record).

    ``records`` is empty when the first line is not a complete JSON object.
    """
    records: list[dict[str, Any]] = []
    more = False
    used = 0
    while True:
        start = fh.tell()
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
            whole = None if records else _long_first_line(fh, start)
            if whole is None:
                break
            raw = whole
        value = _object_of(raw)
        if value is None:
            break
        records.append(value)
        used += len(raw)
    return records, more


def is_jsonl(path: str | os.PathLike[str]) -> bool:
    """True when the file is JSONL: its first non-blank line a whole JSON object, however long, and another line after it.

    Cheap on documents: a pretty-printed one fails at its first line (``{``), and a one-line one
    is scanned to its end in chunks, never parsed nor held. A UTF-8 BOM is skipped.
    """
    try:
        with open(path, "rb") as fh:
            while True:
                start = fh.tell()
                raw = fh.readline(_SCAN_CHUNK)
                if not raw:
                    return False
                if start == 0 and raw.startswith(_BOM):
                    raw = raw[len(_BOM) :]
                if raw.strip():
                    break
            if raw.endswith(b"\n"):
                end = fh.tell()
            else:
                if not raw.lstrip().startswith(b"{"):
                    return False
                end = _line_end(fh)
            if not _line_follows(fh):
                return False
            fh.seek(start)
            first = fh.read(end - start)
    except OSError:
        return False  # the reader that follows reports the file's problem properly
    first = first.removeprefix(_BOM).strip()
    if not (first.startswith(b"{") and first.endswith(b"}")):
        return False
    return _object_of(first) is not None


def read_file_head(path: str | os.PathLike[str]) -> FileHead:
    """What detection looks at: the head of the file and its first parsed records or document."""
    p = check_file(path)
    size = p.stat().st_size
    if size == 0:
        raise TranscriptError("empty file", file=str(p), expected="a transcript")
    with _open(p) as fh:
        head_raw = fh.read(HEAD_BYTES)
        offset = len(_BOM) if head_raw.startswith(_BOM) else 0
        if not offset and (encoding := utf16_of(head_raw)) is not None:
            raise _utf16_error(encoding, str(p))
        head = head_raw[offset:].decode("utf-8", errors="replace")
        start = _first_char(head)
        if start not in ("{", "["):
            return FileHead(path=p, head=head, shape="unknown", records=None, document=None)
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
                return FileHead(path=p, head=head, shape="json", records=records, document=document)
        fh.seek(offset)
        records, more = _probe_lines(fh)
    if records and more:
        return FileHead(path=p, head=head, shape="jsonl", records=records, document=None)
    if records:
        # One complete object and nothing after it: a one-record JSONL file is one JSON document.
        return FileHead(path=p, head=head, shape="json", records=records, document=records[0])
    return FileHead(path=p, head=head, shape="json", records=None, document=None)
