"""One transcript file, compressed: zstd (Codex's ``rollout-*.jsonl.zst``), gzip, bzip2 or xz.

A compressed file is known by its magic bytes, not its suffix (a download may
lose the suffix, a ``.gz`` may be no gzip at all). ``decompress`` writes the
one file it holds into a folder, under its inner name (``rollout-x.jsonl.zst``
becomes ``rollout-x.jsonl``), so that detection, notes and every format read
it as if the user had given that file. A compressed tar (``.tar.gz``) is a
folder archive instead: ``holds_tar`` tells the two apart, and
``lab.formats.containers.archive`` unpacks one and calls ``decompress`` for the other,
so both keep its temporary folder, its name mapping and its size limit.

Why each guard exists:

* a few KiB of zstd or gzip can inflate to gigabytes: bytes are counted as
  they are written and decompression stops past ``max_bytes`` (the archive
  limit). zstd is fed in small pieces because one call can inflate its input
  some 32,000 times (a 128 KiB block of one repeated byte takes 4 bytes);
* ``zstandard``'s stream reader ends quietly on a truncated frame, so zstd is
  read frame by frame and a frame with no end is an error, as a truncated
  gzip, bzip2 or xz stream already is in the stdlib;
* the inner name comes from the user's file name and ends up as a path: only
  its last component, without control characters, is used.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import re
import zlib
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import IO

import zstandard

from ...errors import TranscriptError

__all__ = ["MAGIC", "TAR_HEAD", "compression", "compression_of", "holds_tar", "is_tar_header", "inner_name", "decompress"]

# First bytes of each stream, by the name errors use.
MAGIC: dict[str, bytes] = {
    "zstd": b"\x28\xb5\x2f\xfd",
    "gzip": b"\x1f\x8b",
    "bzip2": b"BZh",
    "xz": b"\xfd7zXZ\x00",
}
_SUFFIXES = (".zst", ".zstd", ".gz", ".gzip", ".bz2", ".xz")
# "ustar" at this offset marks a tar header (POSIX and GNU tars alike).
TAR_HEAD = 257 + 5
_CHUNK = 1 << 20
_ZSTD_FEED = 512  # input bytes per zstd call: at most ~16 MiB out at the worst ratio (see the docstring)
_EXPECTED = "a zstd, gzip, bzip2 or xz compressed transcript file, or a compressed tar of a session folder"
_OPENERS: dict[str, Callable[[Path], io.BufferedIOBase]] = {"gzip": gzip.GzipFile, "bzip2": bz2.BZ2File, "xz": lzma.LZMAFile}
_UNSAFE = re.compile(r"[\x00-\x1f\x7f/\\:]")


def compression(path: Path) -> str | None:
    """The compression ``path`` starts with (a ``MAGIC`` key), else None; None for what cannot be read."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(6)
    except OSError:
        return None
    return compression_of(head)


def compression_of(head: bytes) -> str | None:
    """The compression a stream starting with ``head`` is in (a ``MAGIC`` key), else None."""
    return next((kind for kind, magic in MAGIC.items() if head.startswith(magic)), None)


def _zstd_chunks(fh: IO[bytes]) -> Iterator[bytes]:
    """The decompressed bytes of every zstd frame in ``fh``; EOFError when the last frame has no end."""
    dec = zstandard.ZstdDecompressor()
    obj = dec.decompressobj()
    started = False
    while data := fh.read(_ZSTD_FEED):
        while data:
            if obj.eof:  # a frame ended: what follows starts the next one (a zstd file may hold several)
                obj = dec.decompressobj()
            out = obj.decompress(data)
            started = True
            data = obj.unused_data if obj.eof else b""
            if out:
                yield out
    if started and not obj.eof:
        raise EOFError("the zstd stream ends in the middle of a frame (truncated)")


def _stream(path: Path, kind: str) -> Generator[bytes, None, None]:
    """Decompressed chunks of ``path``, compressed as ``kind``."""
    if kind == "zstd":
        with open(path, "rb") as fh:
            yield from _zstd_chunks(fh)
        return
    with _OPENERS[kind](path) as src:
        while chunk := src.read(_CHUNK):
            yield chunk


def holds_tar(path: Path, kind: str) -> bool:
    """Whether the stream ``path`` holds starts as a tar; False for one that cannot be read (``decompress`` says why)."""
    head = b""
    try:
        chunks = _stream(path, kind)
        try:
            for chunk in chunks:
                head += chunk
                if len(head) >= TAR_HEAD:
                    break
        finally:
            chunks.close()
    except (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError, zstandard.ZstdError):
        return False
    return is_tar_header(head)


def is_tar_header(head: bytes) -> bool:
    """Whether ``head`` (at least ``TAR_HEAD`` bytes of a stream) starts a tar."""
    return head[TAR_HEAD - 5 : TAR_HEAD] == b"ustar"


def inner_name(path: Path) -> str:
    """The name of the file ``path`` holds: without its compression suffix, safe as one path component."""
    name = path.name
    for suffix in _SUFFIXES:
        if name.lower().endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
            break
    name = _UNSAFE.sub("_", name).strip()
    return name if name not in ("", ".", "..") else "transcript"


def decompress(path: Path, dest: Path, *, max_bytes: int, shown: str | None = None) -> Path:
    """Write the file compressed in ``path`` to ``dest/<inner name>`` and return that path.

    Errors are ``TranscriptError`` naming ``shown`` (else ``path``); what was written is removed.
    """
    name = shown or str(path)
    kind = compression(path)
    if kind is None:
        raise TranscriptError("not a zstd, gzip, bzip2 or xz compressed file", file=name, expected=_EXPECTED)
    target = dest / inner_name(path)
    written = 0
    try:
        with open(target, "wb") as out:
            for chunk in _stream(path, kind):
                written += len(chunk)
                if written > max_bytes:
                    raise TranscriptError(
                        f"refused to decompress: it decompresses to more than {max_bytes / 2**20:,.0f} MiB (the limit for a compressed file)",
                        file=name, expected=_EXPECTED,
                    )
                out.write(chunk)
    except TranscriptError:
        target.unlink(missing_ok=True)
        raise
    except (EOFError, ValueError, zlib.error, lzma.LZMAError, zstandard.ZstdError, gzip.BadGzipFile) as exc:
        # A damaged or truncated stream: one line that says so, no traceback.
        target.unlink(missing_ok=True)
        raise TranscriptError(f"cannot decompress {kind}: {type(exc).__name__}: {exc}", file=name, expected=_EXPECTED) from None
    except OSError as exc:
        # bz2 reports a damaged stream as a bare OSError ("Invalid data stream"), a full disk likewise.
        target.unlink(missing_ok=True)
        raise TranscriptError(f"cannot decompress {kind}: {exc.strerror or exc}", file=name, expected=_EXPECTED) from None
    if written == 0:
        target.unlink(missing_ok=True)
        raise TranscriptError(f"the {kind} file holds nothing (it decompresses to no bytes)", file=name, expected=_EXPECTED)
    return target
