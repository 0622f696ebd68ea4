"""What a batch run (a compare, a sweep) owes its user beyond its rows: why a file was not compared, where a
constraint broke, and what the import of each transcript warned about.

A folder compare that shows 12 rows for 14 sessions, or a sweep that ends "0 feasible, 0 on the Pareto
front", is only useful with the reason beside it. The pieces here are pure (no printing, no I/O) so the
CLI, the library's result objects and the app say the same thing:

- ``first_invalid`` / ``first_failure``: where in one replay a request first broke a constraint, with the
  validator's reason; ``summary_row`` puts them in the compare table, so they cross from worker processes
  with the row, where the ``Report`` does not;
- ``blocked``: the constraint that every row (config, trial) of a run broke, where, and what would fix it;
- ``batch_line``: "12 of 14 compared; 2 unreadable: a.jsonl (why), ...; left out, not transcripts: notes.md";
- ``import_warnings``: the lines a transcript's import left in ``ImportNotes.warnings`` (a cut-off last
  line, skipped records, a possible misread, an order rebuilt), plus the simulated clock a replay falls
  back to when the file holds no timestamp: a verb that reads a transcript prints each once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from ..core.validate import anthropic_problems, openai_problems
from ..errors import LabError
from .report import column

if TYPE_CHECKING:  # pragma: no cover
    from ..core.messages import Transcript
    from .report import Report

__all__ = [
    "CONSTRAINTS",
    "Blocked",
    "blocked",
    "broken",
    "broken_row",
    "broken_text",
    "first_invalid",
    "first_failure",
    "batch_line",
    "import_warnings",
    "CLOCK_WARNING",
]

# The constraints a run can break, in the order they are explained: an invalid request is refused by the
# provider whatever the window, so it is named before a failure (an overflow recovery could not fix).
CONSTRAINTS = ("invalid_requests", "failures")
_WHAT = {"invalid_requests": "invalid requests (the provider would refuse them)", "failures": "failed requests (over the window after recovery)"}
# A reason or a list of names is cut here, so every item stays one readable line.
_REASON_CHARS = 160
_NAMES_SHOWN = 5
CLOCK_WARNING = "no message has a timestamp: the replay runs on a simulated clock, so prompt-cache expiry is not the session's"


def _cut(text: str, limit: int = _REASON_CHARS) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def first_invalid(report: Report) -> tuple[str | None, bool | None]:
    """Where the replay first sent an invalid request, with the validator's reason; and whether the
    uncompacted history at that request breaks the rules too (the source is invalid there, so no config can fix it).
    (None, None) when every request is valid."""
    for k, row in enumerate(report.rows):
        if row.valid:
            continue
        reason = row.problems[0] if row.problems else "fails the provider's rules"
        where = f"request {row.index} (message {row.message_index}): {_cut(reason)}"
        try:
            raw = report.raw_at(k)
        except (LabError, TypeError):  # a report read back from JSON holds no history
            return where, None
        return where, bool(anthropic_problems(raw) or openai_problems(raw))
    return None, None


def first_failure(report: Report) -> str | None:
    """Where the replay first failed a request (over the window after recovery), how far over, and why recovery gave up."""
    failed = column(report.rows, "failed")
    # The first failed row alone is built (a report's rows are columns: a Row is made when read).
    for row in (report.rows[k] for k, f in enumerate(failed) if f):
        hidden = f" (+{report.hidden_tokens:,} hidden)" if report.hidden_tokens else ""
        why = next((str(e.get("detail")) for e in row.events if e.get("stage") == "recovery" and e.get("success") is False and e.get("detail")), "")
        text = f"request {row.index} (message {row.message_index}): {row.sent_tokens:,} tokens{hidden} for a {report.window:,}-token window"
        return text + (f"; {_cut(why)}" if why else "")
    return None


@dataclass(frozen=True)
class Blocked:
    """A constraint every config (or trial) of a run broke: which, by how many, the first place, and the fix."""

    constraint: str
    # How many configs (trials) broke it: all of them.
    count: int
    # "NAME: request K (message M): reason" of the first row that broke it.
    where: str
    fix: str
    # What a run's rows are grouped by: "config" for a compare, "trial" for a sweep.
    who: str = "config"

    @property
    def text(self) -> str:
        what = _WHAT.get(self.constraint, self.constraint)
        return f"all {self.count} {self.who}(s) broke one constraint, {what}: first at {self.where}; {self.fix}"


def _fix(constraint: str, rows: Sequence[Mapping[str, Any]], allow_failures_hint: bool) -> str:
    if constraint == "invalid_requests":
        found = [r for r in rows if r.get("first_invalid")]
        if found and all(r.get("first_invalid_source") for r in found):
            return ("the source itself is invalid there (its uncompacted history breaks the same rule), so no config can fix it: "
                    "repair the file, or leave it out")
        return "the compaction made the request invalid (the uncompacted history is valid there): try other configs or a larger window"
    peak = max((int(r["peak_raw"]) for r in rows if isinstance(r.get("peak_raw"), (int, float))), default=0)
    bigger = f"a window of at least {peak:,} tokens (the largest uncompacted history)" if peak else "a bigger window"
    fix = f"fix: {bigger}, or a config that compacts earlier (a lower watermark.ratio)"
    return fix + (", or allow failures (--allow-failures)" if allow_failures_hint else "")


def blocked(rows: Sequence[Mapping[str, Any]], constraints: Iterable[str] = CONSTRAINTS, *, by: str = "config",
            allow_failures_hint: bool = False) -> Blocked | None:
    """The first constraint that every config broke, or None when some config kept every one.

    ``rows``: compare rows (``summary_row``), one per transcript x config, grouped by their ``by`` key (a config
    breaks a constraint when any of its transcripts does; a row without the key is a group of its own). ``where``
    names the first row, in order, that broke it, and its ``transcript``.
    """
    groups: dict[Any, list[Mapping[str, Any]]] = {}
    for k, r in enumerate(rows):
        groups.setdefault(r.get(by, ("row", k)), []).append(r)
    if not groups:
        return None
    for constraint in constraints:
        if not all(any((r.get(constraint) or 0) > 0 for r in group) for group in groups.values()):
            continue
        where = "first_invalid" if constraint == "invalid_requests" else "first_failure"
        broke = [r for r in rows if (r.get(constraint) or 0) > 0]
        first = next((r for r in broke if r.get(where)), broke[0])
        place = str(first.get(where) or f"{first.get(constraint)} request(s)")
        name = first.get("transcript")
        where = f"{name}: {place}" if name else place
        return Blocked(constraint, len(groups), where, _fix(constraint, broke, allow_failures_hint), by)
    return None


def broken(rows: Sequence[Mapping[str, Any]], constraints: Iterable[str] = CONSTRAINTS) -> dict[str, dict[str, Any]]:
    """What one config (a sweep's trial) broke over its rows, one per transcript: constraint -> ``count`` (summed),
    ``where`` (the first row's "transcript: request K (message M): reason"), ``source`` (every invalid request
    found is invalid in the uncompacted history too) and ``peak_raw`` (the largest uncompacted history among them).
    Plain JSON values, so a sweep can keep it in its study file."""
    out: dict[str, dict[str, Any]] = {}
    for constraint in constraints:
        hit = [r for r in rows if (r.get(constraint) or 0) > 0]
        if not hit:
            continue
        column = "first_invalid" if constraint == "invalid_requests" else "first_failure"
        first = next((r for r in hit if r.get(column)), hit[0])
        place = str(first.get(column) or f"{first.get(constraint)} request(s)")
        found = [r for r in hit if r.get("first_invalid")]
        out[constraint] = {
            "count": int(sum(int(r.get(constraint) or 0) for r in hit)),
            "where": f"{first['transcript']}: {place}" if first.get("transcript") else place,
            "source": bool(found) and all(bool(r.get("first_invalid_source")) for r in found),
            "peak_raw": max((int(r["peak_raw"]) for r in hit if isinstance(r.get("peak_raw"), (int, float))), default=0),
        }
    return out


def broken_text(found: Mapping[str, Mapping[str, Any]]) -> str | None:
    """One line of what ``broken`` found: "invalid_requests 3 (a.jsonl: request 2 (message 5): ...)"; None when nothing broke."""
    if not found:
        return None
    return "; ".join(f"{name} {v.get('count', 0)} ({v.get('where', '?')})" for name, v in found.items())


def broken_row(key: Any, found: Mapping[str, Mapping[str, Any]], by: str = "trial") -> dict[str, Any]:
    """``broken``'s result as one row ``blocked`` reads: a sweep explains its trials as a compare explains its configs."""
    invalid, failed = found.get("invalid_requests", {}), found.get("failures", {})
    return {
        by: key,
        "invalid_requests": invalid.get("count", 0), "first_invalid": invalid.get("where"), "first_invalid_source": invalid.get("source"),
        "failures": failed.get("count", 0), "first_failure": failed.get("where"),
        "peak_raw": max(int(invalid.get("peak_raw") or 0), int(failed.get("peak_raw") or 0)),
    }


def _names(items: Sequence[str]) -> str:
    shown = ", ".join(items[:_NAMES_SHOWN])
    return shown + (f", ... and {len(items) - _NAMES_SHOWN} more" if len(items) > _NAMES_SHOWN else "")


def batch_line(listed: Sequence[str], unreadable: Mapping[str, str], left_out: Sequence[str] = (), verb: str = "compared") -> str:
    """One line on what a batch run read: "12 of 14 compared; 2 unreadable: a.jsonl (why), b.json (why); left out, not transcripts: notes.md"."""
    done = len(listed) - len(unreadable)
    parts = [f"{done} of {len(listed)} {verb}"]
    if unreadable:
        parts.append(f"{len(unreadable)} unreadable: " + _names([f"{name} ({_cut(why, 100)})" for name, why in unreadable.items()]))
    if left_out:
        parts.append("left out, not transcripts: " + _names(list(left_out)))
    return "; ".join(parts)


def import_warnings(t: Transcript, *, replayed: bool = False, use_timestamps: bool = True) -> list[str]:
    """The transcript's import warnings, each once, in the order the import gave them; with ``replayed``, also
    ``CLOCK_WARNING`` when the replay will time it by a simulated clock although the settings ask for timestamps."""
    out: list[str] = []
    for warning in t.notes.warnings:
        if warning not in out:
            out.append(warning)
    if replayed and use_timestamps and t.messages and all(m.timestamp is None for m in t.messages):
        out.append(CLOCK_WARNING)
    return out
