"""Is an imported transcript plausible, or did a reader misread a file of another format?

A reader given a file of the wrong kind rarely fails outright: most lines are
skipped as "not mine" and what is left is a transcript of empty or system
messages (an event stream once imported as 175 system messages and 0 tool
calls). ``check`` looks at the result and says what is wrong with it, with
numbers. Every threshold is here, named:

===========================  =====================================================  ========
rule                         when                                                   verdict
===========================  =====================================================  ========
no messages                  the main thread holds no message                       problem
only system messages         no user and no assistant message                       problem
no user turn                 assistant messages only (no prompt, no tool result)    problem
mostly system                system messages > ``MOSTLY_SYSTEM`` (75%) of all        problem
mostly empty                 messages without content > ``MOSTLY_EMPTY`` (50%)       problem
records skipped              skipped >= ``SKIPPED_PROBLEM`` (95%) of records read,   problem
                             with at least ``MIN_RECORDS`` (20) read
no assistant turn            user messages only (a session that has just started)   warning
many records skipped         skipped >= ``SKIPPED_WARNING`` (80%), ``MIN_RECORDS``   warning
tool calls dropped           content blocks of an unknown kind naming a tool or     problem
                             function were skipped, and the result holds no tool
                             call (a reader that met another format's tool calls)
content dropped              records or blocks the reader could not read (a known   warning
                             block with fields of the wrong type, ``*:invalid``,
                             ``empty_message``) > ``DROPPED_WARNING`` (5%) of
                             records read, at least ``MIN_DROPPED`` (2) of them
===========================  =====================================================  ========

Boundary markers are not counted as system messages. A "problem" makes the
result unusable: ``lab.formats.load`` then tries the next detected format, or
raises ``TranscriptError`` when the format was forced. "No messages" and "no
user turn" alone are *tolerable*: real files show them too (a Gemini session
that is only a header, a log with one reply so far), so when no detected
candidate gives a clean result, ``load`` keeps the best tolerable one with
the problem as a warning; a forced format gets no such grace. A "warning" keeps the
result, with a line in ``ImportNotes.warnings`` starting ``MISREAD_PREFIX``,
which the CLI prints on stderr and the app shows with ``st.warning``.

"Content dropped" is the rule that nothing is lost unseen: a file whose
fields have the wrong type (a Cline task whose texts were numbers kept 12 of
145 messages) imports with exit 0, so what the reader could not read is said
once it is more than a small share. A reader that rebuilds the file's order
says so itself (``claude_code_chain``).

The thresholds leave room for real sessions: a Codex rollout that has only
begun is 2 system messages (injected context) and 1 user message; Claude Code
sessions skip about a third of their records.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.messages import ImportNotes, ToolUseBlock, Transcript

__all__ = [
    "MOSTLY_SYSTEM",
    "MOSTLY_EMPTY",
    "SKIPPED_PROBLEM",
    "SKIPPED_WARNING",
    "MIN_RECORDS",
    "DROPPED_WARNING",
    "MIN_DROPPED",
    "MISREAD_PREFIX",
    "Verdict",
    "check",
    "misread_warnings",
]

MOSTLY_SYSTEM = 0.75
MOSTLY_EMPTY = 0.5
SKIPPED_PROBLEM = 0.95
SKIPPED_WARNING = 0.8
# Below this many records the skipped share says little (a 9-line file with 8 notices is fine).
MIN_RECORDS = 20
# Records or blocks a reader could not read, as a share of the records read, above which it says so.
DROPPED_WARNING = 0.05
MIN_DROPPED = 2
# Starts every warning this module (and ``load``'s fallback) adds, so front ends can show them loudly.
MISREAD_PREFIX = "possible misread: "


@dataclass(frozen=True)
class Verdict:
    # What makes the result unusable; empty when it is usable.
    problems: tuple[str, ...] = ()
    # What is suspicious about a usable result (without ``MISREAD_PREFIX``).
    warnings: tuple[str, ...] = ()
    # Every problem is one a real file can show too (no messages, no user turn): a header-only
    # session, a log with one reply so far. Auto-detection falls back to such a result, loudly.
    tolerable: bool = False

    @property
    def ok(self) -> bool:
        return not self.problems


def _share(part: int, whole: int) -> str:
    return f"{part} of {whole}"


def check(transcript: Transcript) -> Verdict:
    """What is wrong with this import's result, by the rules in the module docstring."""
    problems: list[str] = []
    warnings: list[str] = []
    # One pass over the messages, boundary markers left out: this runs on every import, and on a
    # 100 MB log four passes were a tenth of what parsing its JSON costs.
    n = system = user = empty = 0
    for m in transcript.messages:
        if m.boundary is not None or m.tag == "boundary":
            continue
        n += 1
        role = m.role
        if role == "system":
            system += 1
        elif role == "user":
            user += 1
        if not m.content:
            empty += 1
    assistant = n - system - user
    if n == 0:
        problems.append("no messages")
    elif user == 0 and assistant == 0:
        problems.append(f"{_share(system, n)} messages are system messages, no user or assistant turn")
    elif user == 0:
        problems.append(f"no user turn: {assistant} assistant message(s) answer no prompt and no tool result")
    elif system > MOSTLY_SYSTEM * n:
        problems.append(f"{_share(system, n)} messages are system messages")
    elif assistant == 0:
        warnings.append(f"no assistant turn: {user} user message(s) and no reply (a session that has just started?)")
    if n and empty > MOSTLY_EMPTY * n:
        problems.append(f"{_share(empty, n)} messages are empty")
    tolerable = bool(problems) and (n == 0 or (user == 0 and assistant > 0 and system <= MOSTLY_SYSTEM * n))
    problems_skipped, warning_skipped = _skipped(transcript.notes)
    dropped = _tools_dropped(transcript)
    if dropped:
        problems_skipped.append(dropped)
    problems += problems_skipped
    warnings += warning_skipped
    unread = _dropped(transcript.notes)
    if unread and not problems_skipped and not warning_skipped:
        warnings.append(unread)
    return Verdict(tuple(problems), tuple(warnings), tolerable and not problems_skipped and len(problems) == 1)


def _skipped(notes: ImportNotes) -> tuple[list[str], list[str]]:
    read = notes.records_read
    skipped = sum(notes.skipped.values())
    if read < MIN_RECORDS or skipped < SKIPPED_WARNING * read:
        return [], []
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(notes.skipped.items(), key=lambda kv: -kv[1])[:3])
    text = f"{_share(min(skipped, read), read)} records skipped ({kinds})"
    return ([text], []) if skipped >= SKIPPED_PROBLEM * read else ([], [text])


# What a reader could not read, as opposed to records it skips by design (notices, metadata): a
# block of a known kind with fields of the wrong type, anything counted ``invalid``, a message left empty.
_UNREADABLE = re.compile(r"(?:^|:)invalid$|^empty_message$|^(?:content )?(?:block|part):(?:text|tool_use|tool_result|thinking|image)$")


def _dropped(notes: ImportNotes) -> str | None:
    """The "content dropped" warning, or None."""
    kinds = {k: v for k, v in notes.skipped.items() if _UNREADABLE.search(k)}
    dropped = sum(kinds.values())
    read = notes.records_read
    if dropped < MIN_DROPPED or dropped <= DROPPED_WARNING * read:
        return None
    listed = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])[:3])
    return f"{dropped} records or blocks could not be read and were dropped ({listed}), against {read} records read"


def _tools_dropped(transcript: Transcript) -> str | None:
    """A reader that skipped tool-call blocks of another format's shape and kept none of its own misread the file."""
    skipped = {k: v for k, v in transcript.notes.skipped.items() if _TOOLISH.search(k)}
    if not skipped or any(isinstance(b, ToolUseBlock) for m in transcript.messages for b in m.content):
        return None
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(skipped.items(), key=lambda kv: -kv[1])[:3])
    return f"tool calls dropped: {sum(skipped.values())} skipped content block(s) look like tool calls ({kinds}) and no tool call was read"


# A content block of a kind the reader does not know (``block:KIND``, ``content block:KIND``, ``content part:KIND``) that names a tool
# call or result of some other format: toolRequest, tool-call, function_call, functionResponse.
_TOOLISH = re.compile(r"^(?:content )?(?:block|part):.*(?:tool|function)", re.I)


def misread_warnings(notes: ImportNotes) -> list[str]:
    """The warnings that say an import may be a misread (what the CLI and app show loudly)."""
    return [w for w in notes.warnings if w.startswith(MISREAD_PREFIX)]
