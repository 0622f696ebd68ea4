"""Aider's edit blocks in an assistant reply, split out so they can become tool calls.

Aider never uses function calling: the model writes its edits into the reply
as text and aider applies them. Left as prose, a long edit is invisible to the
stages (dedup, spill, summaries); as a tool call it is an edit like any other
agent's. Two shapes are recognised:

* **SEARCH/REPLACE** (aider's ``diff`` formats): a ``<<<<<<< SEARCH`` line,
  the old text, ``=======``, the new text, ``>>>>>>> REPLACE``. The file path
  is on one of the three lines before the block (usually above the opening
  fence, sometimes on the fence itself as ```` ```path ````); a block without
  one edits the file the previous block named, as aider does.
* **whole file** (aider's ``whole`` format): a line holding only a path, then
  a fenced block with the file's new content. Any code snippet looks like
  that, so it is taken for an edit only when aider confirmed writing that path
  (``confirmed``, from its "Applied edit to PATH" notices).

``split_edits`` returns the reply as segments in order: prose (``str``) and
edits (``Edit``). Unified diffs (aider's ``udiff`` format) stay prose.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

__all__ = ["Edit", "split_edits", "normalise_path"]

# Aider accepts 5 to 9 marker characters; models are not always exact.
_HEAD = re.compile(r"^<{5,9} SEARCH>?\s*$")
_DIVIDER = re.compile(r"^={5,9}\s*$")
_UPDATED = re.compile(r"^>{5,9} REPLACE\s*$")
_FENCE = re.compile(r"^(`{3,})(.*)$")
# How far above a SEARCH line the path may be (path line, fence line, one spare).
_LOOKBACK = 3


@dataclass(frozen=True)
class Edit:
    """One edit the reply asked for: a replacement (``old`` is not None) or a whole new content."""

    path: str
    new: str
    old: str | None = None

    @property
    def whole(self) -> bool:
        return self.old is None


def normalise_path(path: str) -> str:
    """A path as aider and the model may both spell it (``./a.py`` and ``a.py`` are one file)."""
    p = path.strip()
    while p.startswith("./"):
        p = p[2:]
    return p


def _path_candidate(line: str) -> str | None:
    """The path a line names, when the line is nothing but a (decorated) path."""
    text = line.strip()
    fence = _FENCE.match(text)
    if fence:
        # ```path/to/file.py: the fence carries the path instead of a language.
        rest = fence.group(2).strip()
        return rest if rest and ("." in rest or "/" in rest) and " " not in rest else None
    text = text.rstrip(":").lstrip("#").strip().strip("`").strip("*").strip()
    if not text or text == "..." or len(text.split()) != 1:
        return None
    return text


def _is_fence(line: str) -> bool:
    return _FENCE.match(line.strip()) is not None


def _take_path(prose: list[str]) -> str | None:
    """Find the path just above a block and drop it (and the opening fence) from ``prose``."""
    for back in range(1, min(_LOOKBACK, len(prose)) + 1):
        line = prose[-back]
        if not line.strip():
            continue
        found = _path_candidate(line)
        if found is not None:
            del prose[-back:]
            return found
        if not _is_fence(line):
            return None
    return None


def _drop_opening_fence(prose: list[str]) -> None:
    # A block with no path of its own still sits in a fence of its own.
    end = len(prose)
    while end and not prose[end - 1].strip():
        end -= 1
    if end and _is_fence(prose[end - 1]):
        del prose[end - 1 :]


def _search_replace(lines: list[str], start: int) -> tuple[str, str, int] | None:
    """(old, new, index after the block) for the block whose SEARCH line is ``start``, or None when malformed."""
    i = start + 1
    old: list[str] = []
    while i < len(lines) and not _DIVIDER.match(lines[i]):
        if _HEAD.match(lines[i]) or _UPDATED.match(lines[i]):
            return None
        old.append(lines[i])
        i += 1
    if i >= len(lines):
        return None
    i += 1
    new: list[str] = []
    while i < len(lines) and not _UPDATED.match(lines[i]):
        if _HEAD.match(lines[i]):
            return None
        new.append(lines[i])
        i += 1
    if i >= len(lines):
        return None
    return "\n".join(old), "\n".join(new), i + 1


def _whole_file(lines: list[str], start: int, confirmed: Collection[str]) -> tuple[str, str, int] | None:
    """(path, content, index after the block) when ``start`` is a confirmed path line followed by a fenced block."""
    path = _path_candidate(lines[start])
    if path is None or _is_fence(lines[start]) or normalise_path(path) not in confirmed:
        return None
    if start + 1 >= len(lines):
        return None
    fence = _FENCE.match(lines[start + 1].strip())
    if fence is None:
        return None
    ticks = fence.group(1)
    for end in range(start + 2, len(lines)):
        if lines[end].strip() == ticks:
            body = lines[start + 2 : end]
            if any(_HEAD.match(x) for x in body):
                return None  # a fenced SEARCH/REPLACE block, not a whole file
            return path, "\n".join(body), end + 1
    return None


def _flush(prose: list[str], segments: list[str | Edit]) -> None:
    text = "\n".join(prose).strip("\n")
    if text.strip():
        segments.append(text)
    prose.clear()


def split_edits(text: str, confirmed: Collection[str] = ()) -> tuple[list[str | Edit], int]:
    """The reply as prose and edit segments in order, and how many SEARCH blocks named no file.

    ``confirmed`` holds the normalised paths aider reported writing; only those
    can be whole-file edits.
    """
    lines = text.split("\n")
    segments: list[str | Edit] = []
    prose: list[str] = []
    last_path: str | None = None
    unnamed = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        if _HEAD.match(line):
            parsed = _search_replace(lines, i)
            if parsed is not None:
                kept = list(prose)
                path = _take_path(prose)
                if path is None:
                    _drop_opening_fence(prose)
                    path = last_path
                if path is None:
                    unnamed += 1
                    prose[:] = kept
                else:
                    old, new, i = parsed
                    if i < len(lines) and lines[i].strip().startswith("```") and lines[i].strip().strip("`") == "":
                        i += 1  # the block's closing fence
                    _flush(prose, segments)
                    segments.append(Edit(path=path, old=old, new=new))
                    last_path = path
                    continue
        elif confirmed:
            whole = _whole_file(lines, i, confirmed)
            if whole is not None:
                path, content, i = whole
                _flush(prose, segments)
                segments.append(Edit(path=path, new=content))
                last_path = path
                continue
        prose.append(line)
        i += 1
    _flush(prose, segments)
    return segments, unnamed
