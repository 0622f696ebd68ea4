"""Which format is this file? Every registered format sniffs the head of it; the declared specificity orders the claims.

The order, in one place (``lab.formats.load`` follows it):

1. A folder or store known by its path: the formats whose ``Format.finds``
   claims the path (an OpenHands V1 conversation folder, a Cline / Roo Code
   task folder, OpenCode storage, which also claims, by path, a session info
   file ``storage/session/<project>/<id>.json`` and ``opencode.db``), most
   specific first (``path_format``). Archives, compressed files and folders
   of sessions are the registry's ``Wrapper``s, tried by ``lab.formats.loading``.
2. A file is read once (``jsonio.read_file_head``: its first 64 KiB, first
   JSONL records or whole small document) and every registered format's
   ``sniff`` says whether it claims it (0: no). A sniffer that raises has said
   "no": it claims nothing and the exception is logged at debug level on the
   ``lab.formats.detect`` logger, never turned into an answer.
3. The candidates are the formats that claim the file, most specific first:
   the order ``registry.order`` draws from each format's declared
   ``more_specific_than`` (a test checks that every two formats that claim one
   of the lab's sample, fixture or corpus files are ordered, and that the
   relation has no circle). Only ``rivals`` (the provider request bodies, which
   share their shapes) are told apart by how strongly each sniff matched.
4. ``load`` reads the file as the first candidate. A ``TranscriptError``
   from it is the answer (it names the line and what was expected). A result
   ``sanity.check`` calls degenerate (mostly system messages, no user turn,
   mostly empty, most records skipped) passes to the next candidate (whose
   errors, now, only count as "did not fit"); the first usable result wins,
   with a ``possible misread:`` warning saying which better-scored formats
   did not fit and why. Failing that, the best *tolerable* result (its only problem
   "no messages" or "no user turn", see ``sanity``) is kept with the problem
   as a warning. When no candidate gives a usable result, ``load`` raises a
   ``TranscriptError`` naming each candidate and what was wrong with it.
5. A format forced with ``load(path, format=...)`` is not detected: its
   result must pass ``sanity.check`` too, or ``load`` raises naming the
   formats detection would have chosen.

No format claims the file (every score 0): ``TranscriptError`` naming the
two or three formats nearest to what the file looks like (``nearest``) and
pointing at ``python -m lab import --help`` for the rest, so the error stays
one short line; an unknown format name gets the names closest to it.

Every read (``read_as``) counts the strings the JSON readers repair (lone
surrogates, NUL; ``jsonio.repairs``) and says so in one warning of the notes.
"""

from __future__ import annotations

import difflib
import logging
import os
from pathlib import Path

from ..core.messages import Transcript
from ..errors import LabError, TranscriptError
from .jsonio import check_file, read_file_head, repair_note, repairs
from .registry import FORMATS, FileHead, order
from .sanity import MISREAD_PREFIX, Verdict, check

__all__ = [
    "detect",
    "scores",
    "candidates",
    "ranked_candidates",
    "describe_candidates",
    "nearest",
    "close_names",
    "HELP_HINT",
    "read_as",
    "read_forced",
    "read_detected",
    "accept",
    "path_format",
    "read_by_path",
    "known_format",
    "format_of",
]

log = logging.getLogger("lab.formats.detect")


def scores(probe: FileHead) -> dict[str, int]:
    """Each registered format's claim on the file (0 = none, else its sniff's strength), in registration order."""
    out: dict[str, int] = {}
    for name, fmt in FORMATS.items():
        try:
            score = int(fmt.sniff(probe))
        except Exception:
            # A sniffer bug must not stop detection nor pick a format: it does not claim the file.
            log.debug("sniffer of %s failed on %s; counted as 0", name, probe.path, exc_info=True)
            score = 0
        out[name] = max(0, min(100, score))
    return out


def candidates(probe: FileHead) -> list[tuple[str, int]]:
    """``(format, strength)`` for every format that claims the file, most specific first (``registry.order``)."""
    return order(scores(probe))


def describe_candidates(ranked: list[tuple[str, int]], limit: int = 3) -> str:
    """``managed_agents (97), openai_chat (55)``: the best few candidates, for error messages."""
    return ", ".join(f"{n} ({s})" for n, s in ranked[:limit]) or "no format claims it"


# Where to look for the rest, in errors that name only a few formats.
HELP_HINT = "`python -m lab import --help` for the rest"
# The formats most files of each probe shape turn out to be, most common first: what an
# unrecognised file of that shape is nearest to.
_BY_SHAPE: dict[str, tuple[str, ...]] = {
    "jsonl": ("claude_code", "openai_chat", "anthropic"),
    "json": ("lab", "anthropic", "openai_chat"),
    "unknown": ("aider", "claude_code", "lab"),
}
# Words in a file's head that point at one format whatever its shape.
_HEAD_HINTS: tuple[tuple[str, str], ...] = (
    ('"parentUuid"', "claude_code"),
    ('"payload"', "openai_responses"),
    ('"tool_calls"', "openai_chat"),
    ('"tool_use"', "anthropic"),
    ('"parts"', "gemini"),
    ('"messages"', "anthropic"),
)


def nearest(probe: FileHead, limit: int = 3) -> list[str]:
    """The few registered formats an unrecognised file is closest to: named by its keys, then by its shape."""
    names: list[str] = [name for key, name in _HEAD_HINTS if key in probe.head]
    names += _BY_SHAPE.get(probe.shape, _BY_SHAPE["unknown"])
    out: list[str] = []
    for name in names:
        if name in FORMATS and name not in out:
            out.append(name)
    return out[:limit]


def close_names(name: str, limit: int = 3) -> str:
    """``"lab, claude_code"``: the registered format names closest to a misspelt one (else the usual three)."""
    close = difflib.get_close_matches(name, list(FORMATS), n=limit, cutoff=0.5)
    return ", ".join(close or [n for n in _BY_SHAPE["jsonl"] if n in FORMATS])


def _or(names: list[str]) -> str:
    """``"a, b or c"``."""
    if len(names) < 2:
        return names[0] if names else "lab"
    return f"{', '.join(names[:-1])} or {names[-1]}"


def _unknown(probe: FileHead) -> TranscriptError:
    return TranscriptError(
        f"unknown transcript format (read as {probe.shape})",
        file=str(probe.path),
        expected=f"a known format such as {_or(nearest(probe))}; {HELP_HINT}",
    )


def ranked_candidates(path: str | os.PathLike[str]) -> list[tuple[str, int]]:
    """``candidates`` of the file at ``path``; TranscriptError when none claims it."""
    probe = read_file_head(path)
    ranked = candidates(probe)
    if not ranked:
        raise _unknown(probe)
    return ranked


def path_format(path: Path, format: str | None = None) -> str | None:
    """The most specific format that claims ``path`` by its path (a folder, a store; only ``format``, when given), else None."""
    claims = {name: 1 for name, fmt in FORMATS.items() if fmt.finds is not None and format in (None, name) and fmt.finds(path)}
    return next((name for name, _ in order(claims)), None)


def read_by_path(name: str, path: Path) -> Transcript:
    """Read ``path`` as the format ``name`` (one ``path_format`` found), unchecked."""
    read = FORMATS[name].read_found
    assert read is not None, f"{name} claims no path"
    return read(path)


def known_format(format: str | None, path: Path) -> str | None:
    """``format`` when the lab has it (or None); TranscriptError for a name it lacks."""
    if format is not None and format not in FORMATS:
        raise TranscriptError(f"unknown format {format!r}", file=str(path), expected=f"a format such as {close_names(format)}; {HELP_HINT}")
    return format


def format_of(path: Path, format: str | None) -> str:
    """The format ``load`` would read ``path`` as: its path claims, then the file's head; ``format`` when given."""
    if known_format(format, path) is not None:
        return str(format)
    found = path_format(path)
    return found if found is not None else ranked_candidates(check_file(path))[0][0]


def detect(path: str | os.PathLike[str]) -> str:
    """The name of the format of the file at ``path`` (the best candidate); TranscriptError when none claims it."""
    return ranked_candidates(path)[0][0]



# The lab's own JSON holds exactly what the lab wrote (an empty transcript too): never degenerate.
_TRUSTED = frozenset({"lab"})


def read_as(name: str, path: Path) -> Transcript:
    """Read ``path`` with the format ``name``, unchecked; any failure is a TranscriptError."""
    fmt = FORMATS.get(name)
    if fmt is None:
        raise TranscriptError(f"unknown format {name!r}", file=str(path), expected=f"a format such as {close_names(name)}; {HELP_HINT}")
    try:
        with repairs() as tally:
            transcript = fmt.read(path)
        note = repair_note(tally)
        if note is not None:
            transcript.notes.warnings.append(note)
        return transcript
    except TranscriptError:
        raise
    except LabError as exc:
        raise TranscriptError(str(exc), file=str(path)) from exc
    except (Exception, RecursionError) as exc:
        # Last line of defence at the edge: an importer bug or an input shape nobody foresaw
        # still surfaces as the lab's error, with the cause chained for debugging.
        raise TranscriptError(f"could not import as {name}: {type(exc).__name__}: {exc}", file=str(path)) from exc


def accept(transcript: Transcript, name: str, *, file: str, hint: str | None = None, verdict: Verdict | None = None) -> Transcript:
    """The result of a forced (or folder) read when ``sanity.check`` finds it usable; else TranscriptError.

    ``hint`` names the formats detection would have picked, for the error. ``verdict`` is the
    caller's own ``check`` of this transcript, when it made one: a check walks every message
    (about 0.1 s on a 100 MB session), so it is made once per import.
    """
    if verdict is None:
        verdict = check(transcript)
    if not verdict.ok and name not in _TRUSTED:
        looks = f"; the file looks like {hint}" if hint else ""
        raise TranscriptError(
            f"read as {name}, it gives no usable transcript: {'; '.join(verdict.problems)}{looks}",
            file=file,
            expected=f"a file in the {name} format",
        )
    transcript.notes.warnings.extend(MISREAD_PREFIX + w for w in verdict.problems + verdict.warnings)
    return transcript


def read_forced(name: str, path: Path) -> Transcript:
    """Read ``path`` as the format ``name`` (no detection); a degenerate result is a TranscriptError."""
    if name in FORMATS and name not in _TRUSTED:
        probe = read_file_head(path)
        lab = [n for n in _TRUSTED if n in FORMATS and FORMATS[n].sniff(probe) >= 100]
        if lab:
            # The lab's own JSON keeps its messages in a shape other readers half understand.
            raise TranscriptError(f"this is the lab's own JSON ({lab[0]}), not {name}", file=str(path), expected=f"a file in the {name} format")
    t = read_as(name, path)
    verdict = check(t)
    if verdict.ok or name in _TRUSTED:
        return accept(t, name, file=str(path), verdict=verdict)
    try:
        others = [(n, s) for n, s in candidates(read_file_head(path)) if n != name]
    except TranscriptError:
        others = []
    return accept(t, name, file=str(path), hint=describe_candidates(others) if others else None, verdict=verdict)


def read_detected(path: Path) -> Transcript:
    """Read ``path`` as the first candidate format that gives a usable transcript (step 4 above)."""
    ranked = ranked_candidates(path)
    failed: list[tuple[str, int, str]] = []
    fallback: Transcript | None = None
    for name, score in ranked:
        try:
            t = read_as(name, path)
        except TranscriptError as exc:
            if not failed:
                # The best candidate refused the file: its error (line, path, expectation) is the
                # answer. Reading on with a weaker claim could turn an importer's precise refusal
                # into a plausible-looking misread.
                raise
            failed.append((name, score, exc.reason))
            continue
        verdict = check(t)
        if verdict.ok or name in _TRUSTED:
            if failed:
                tried = "; ".join(f"{n} ({s}): {why}" for n, s, why in failed)
                t.notes.warnings.insert(0, f"{MISREAD_PREFIX}read as {name} ({score}), as better-scored formats did not fit: {tried}")
            return accept(t, name, file=str(path), verdict=verdict)
        failed.append((name, score, "; ".join(verdict.problems)))
        if verdict.tolerable and fallback is None:
            fallback = t
    if fallback is not None:
        # Nothing read it better: an empty session or a lone reply is what the file holds.
        fallback.notes.warnings.extend(MISREAD_PREFIX + p for p in check(fallback).problems)
        return fallback
    raise TranscriptError(
        "no format gives a usable transcript: " + "; ".join(f"{n} ({s}): {why}" for n, s, why in failed),
        file=str(path),
        expected="a transcript in one of the formats tried",
    )
