"""Exact OpenAI token counts (``o200k``, ``cl100k``) with tiktoken, fully offline.

tiktoken downloads its BPE rank files on first use, which the lab must never
do: replays run on machines without network and tests forbid it. The PyPI
package ``bpe-openai`` ships the same rank files (gzipped) inside its package
directory, so the encodings are built from those. The decompressed bytes are
checked against the SHA-256 that tiktoken itself pins for the official files,
so a count here is the count ``tiktoken.get_encoding(name)`` would give.

The ``bpe_openai`` package is located with ``importlib.util.find_spec`` and
never imported: importing it would load its 70 MB native extension just to
read a data file. Each encoding is built once per process, on first count,
under a lock so two threads do not both parse 200k ranks.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.util
import threading
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from .base import BaseCounter

__all__ = ["ENCODINGS", "TiktokenCounter", "O200kCounter", "Cl100kCounter", "load_encoding", "data_dir"]


# What tiktoken needs besides the ranks: the pre-tokenising regex and the special
# tokens. These are the published definitions of the two encodings; they must
# match tiktoken's byte for byte or counts drift on edge cases (contractions,
# digit runs, trailing whitespace), which the tests check against an independent
# tokenizer.
_O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_CL100K_PAT = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)

ENCODINGS: dict[str, dict[str, Any]] = {
    "o200k_base": {
        "pat_str": _O200K_PAT,
        "special_tokens": {"<|endoftext|>": 199_999, "<|endofprompt|>": 200_018},
        "sha256": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    },
    "cl100k_base": {
        "pat_str": _CL100K_PAT,
        "special_tokens": {
            "<|endoftext|>": 100_257,
            "<|fim_prefix|>": 100_258,
            "<|fim_middle|>": 100_259,
            "<|fim_suffix|>": 100_260,
            "<|endofprompt|>": 100_276,
        },
        "sha256": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    },
}

_LOCK = threading.Lock()
_BUILT: dict[str, Any] = {}


def data_dir() -> Path:
    """The folder holding ``<encoding>.tiktoken.gz``, inside the installed bpe-openai package."""
    spec = importlib.util.find_spec("bpe_openai")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for loc in locations:
        candidate = Path(loc) / "data"
        if candidate.is_dir():
            return candidate
    raise ConfigError(
        "exact token counts need the BPE rank files shipped by the 'bpe-openai' package, "
        "which is not installed; run `pip install bpe-openai` or pick another counter "
        "(minicode, chars/3.5, calibrated)"
    )


def _read_ranks(name: str, expected_sha256: str) -> dict[bytes, int]:
    path = data_dir() / f"{name}.tiktoken.gz"
    try:
        raw = gzip.decompress(path.read_bytes())
    except FileNotFoundError:
        raise ConfigError(f"BPE rank file {path} is missing from the bpe-openai package; reinstall bpe-openai") from None
    except (OSError, EOFError) as exc:
        raise ConfigError(f"BPE rank file {path} cannot be read: {exc}") from None
    if hashlib.sha256(raw).hexdigest() != expected_sha256:
        raise ConfigError(
            f"BPE rank file {path} does not match the official {name} file (sha256 differs); "
            "counts from it would not be exact"
        )
    ranks: dict[bytes, int] = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def load_encoding(name: str) -> Any:
    """The ``tiktoken.Encoding`` for ``name`` (``o200k_base`` or ``cl100k_base``), built once per process."""
    enc = _BUILT.get(name)
    if enc is not None:
        return enc
    spec = ENCODINGS.get(name)
    if spec is None:
        raise ConfigError(f"unknown encoding {name!r}; choose one of {', '.join(ENCODINGS)}")
    with _LOCK:
        enc = _BUILT.get(name)
        if enc is None:
            try:
                import tiktoken
            except ImportError:
                raise ConfigError("exact token counts need the 'tiktoken' package; run `pip install tiktoken`") from None
            enc = tiktoken.Encoding(
                name,
                pat_str=spec["pat_str"],
                mergeable_ranks=_read_ranks(name, spec["sha256"]),
                special_tokens=dict(spec["special_tokens"]),
            )
            _BUILT[name] = enc
    return enc


class TiktokenCounter(BaseCounter):
    """Exact counts for one tiktoken encoding; the encoder is built on the first count.

    Text that happens to contain ``<|endoftext|>`` is counted as ordinary text:
    a transcript quoting a special token must not raise, and a provider would
    not treat user text as a control token either.
    """

    name = "tiktoken"
    encoding_name = ""

    def __init__(self, encoding: str | None = None) -> None:
        super().__init__()
        if encoding is not None:
            if encoding not in ENCODINGS:
                raise ConfigError(f"unknown encoding {encoding!r}; choose one of {', '.join(ENCODINGS)}")
            self.encoding_name = encoding
            self.name = encoding.removesuffix("_base")
        if not self.encoding_name:
            raise ConfigError("TiktokenCounter needs an encoding name (o200k_base or cl100k_base)")
        self._encoder: Any = None

    @property
    def encoding(self) -> Any:
        if self._encoder is None:
            self._encoder = load_encoding(self.encoding_name)
        return self._encoder

    def _count(self, text: str) -> int:
        return len(self.encoding.encode_ordinary(text))


class O200kCounter(TiktokenCounter):
    """GPT-4o / GPT-4.1 / o-series tokenizer."""

    name = "o200k"
    encoding_name = "o200k_base"


class Cl100kCounter(TiktokenCounter):
    """GPT-4 / GPT-3.5 tokenizer."""

    name = "cl100k"
    encoding_name = "cl100k_base"
