"""Compare configs: one transcript under several configs, or a folder of transcripts under each.

``compare`` replays one transcript in this process and keeps every
``Report`` (``table.reports``); ``compare_folder`` reads each file once and
runs every transcript x config through ``runner.run_grid`` (in this process,
across local processes or on Ray) and keeps only the table rows.
Either way the table is tidy, one row per transcript x config, with flat
columns (``compactions_<strategy>`` per strategy seen), and writes itself to
CSV, Parquet or JSON by the file's extension. A file that cannot be read or
replayed becomes an entry in ``table.errors`` and a row with an ``error`` column;
it never stops the others (``strict=True`` makes an unreadable file an error
before anything is replayed). Every file of a folder is accounted for: compared,
unreadable (``table.unreadable``, with its reason), or not a transcript at all
(``table.left_out``: a note or data file, a link not followed), and
``table.summary()`` says so in one line. Each row also says where its first
invalid and failed requests are (``first_invalid``, ``first_failure``), and
``table.blocked()`` names the constraint every config broke, when one did
(``lab.replayer.explain``).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from collections.abc import Callable, Iterable, Sequence

from ..atomic import write_table
from ..core.config import CompactionConfig
from ..core.messages import Message, Transcript
from ..errors import ConfigError, LabError, TranscriptError
from .engine import replay
from .explain import Blocked, batch_line, blocked, first_failure, first_invalid, import_warnings
from .recorded import RecordedMode
from .report import Report
from .settings import SettingsLike, resolve_settings
from .support import ConfigLike, as_transcript, resolve_config

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from .runner import ProbeSpec
    from .ranking import Ranking

__all__ = ["CompareTable", "compare", "compare_folder", "summary_row", "folder_files", "folder_listing", "read_batch", "Batch", "BASE_COLUMNS"]

ConfigSpec = str | CompactionConfig | tuple[str, ConfigLike]
Progress = Callable[[int, int], Any]

BASE_COLUMNS = [
    "transcript",
    "config",
    "window",
    "requests",
    "peak_sent",
    "peak_raw",
    "requests_over_watermark",
    "breaker_open_over_watermark",
    "compactions",
    "summary_calls",
    "invalid_requests",
    "overflows",
    "failures",
    "first_invalid",
    "first_invalid_source",
    "first_failure",
    "first_request_kept",
    "recorded_compactions",
    "recorded_compactions_mode",
    "retention_score",
    "needed_later_recall",
    "recoverable_share",
    "content_recall",
    "content_needed",
    "content_thin",
    "reread_tokens",
    "cost",
    "cost_uncompacted",
    "cache_hit_ratio",
    "cache_hit_ratio_uncompacted",
    "replay_seconds",
    "error",
]


def summary_row(report: Report, transcript: str, config: str, seconds: float = 0.0) -> dict[str, Any]:
    """The flat comparison line of one report, with where its first invalid and failed requests are."""
    invalid_at, invalid_in_source = first_invalid(report)
    row: dict[str, Any] = {
        "transcript": transcript,
        "config": config,
        "window": report.window,
        "requests": report.requests,
        "peak_sent": report.peak_sent,
        "peak_raw": report.peak_raw,
        "requests_over_watermark": report.requests_over_watermark,
        "breaker_open_over_watermark": report.breaker_open_over_watermark,
        "compactions": sum(report.compactions_by_strategy.values()),
        "summary_calls": report.summary_calls,
        "invalid_requests": report.invalid_requests,
        "overflows": report.overflows,
        "failures": report.failures,
        "first_invalid": invalid_at,
        "first_invalid_source": invalid_in_source,
        "first_failure": first_failure(report),
        "first_request_kept": report.first_request_kept,
        "recorded_compactions": report.recorded_compactions,
        "recorded_compactions_mode": report.recorded_compactions_mode,
        "retention_score": report.retention_score,
        "needed_later_recall": report.needed_later_recall,
        "recoverable_share": report.recoverable_share,
        # Content recall beside the names score: what it rests on, and whether that is too thin to rank by.
        "content_recall": report.content_recall,
        "content_needed": report.content_needed,
        "content_thin": report.content_thin,
        "reread_tokens": report.reread_tokens,
        "cost": report.total_cost,
        "cost_uncompacted": report.total_cost_uncompacted,
        "cache_hit_ratio": report.cache_hit_ratio,
        "cache_hit_ratio_uncompacted": report.cache_hit_ratio_uncompacted,
        "replay_seconds": round(seconds, 4),
        "error": None,
    }
    for strategy, n in report.compactions_by_strategy.items():
        row[f"compactions_{strategy}"] = n
    return row


@dataclass
class CompareTable:
    """Tidy comparison rows, the errors met on the way, and (single-transcript mode) the reports."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)
    # config label -> Report, only from ``compare`` (reports are not shipped back from worker processes).
    reports: dict[str, Report] = field(default_factory=dict)
    # What the run read beyond one transcript per file: a file that holds several sessions, each compared.
    notes: list[str] = field(default_factory=list)
    # Every transcript the run was given, in listing order: compared or not.
    listed: list[str] = field(default_factory=list)
    # Transcript name -> why it could not be read (it has error rows only).
    unreadable: dict[str, str] = field(default_factory=dict)
    # What a folder held that is no transcript: note and data files, links not followed.
    left_out: list[str] = field(default_factory=list)
    # Transcript name -> the warnings its import left (``explain.import_warnings``), for the verbs to print.
    warnings: dict[str, list[str]] = field(default_factory=dict)

    @property
    def columns(self) -> list[str]:
        extra = sorted({k for r in self.rows for k in r if k not in BASE_COLUMNS})
        return BASE_COLUMNS + extra

    def records(self) -> list[dict[str, Any]]:
        """Rows with every column present (absent strategy counts are 0), and a row per error with its ``error``
        column and nothing measured, in the order the transcripts were listed."""
        cols = self.columns
        out = [{c: r.get(c, 0 if c.startswith("compactions_") else None) for c in cols} for r in self.rows]
        out += [{c: e.get(c) for c in cols} for e in self.errors]
        if self.listed:
            order = {name: k for k, name in enumerate(self.listed)}
            out.sort(key=lambda r: order.get(str(r["transcript"]), len(order)))  # stable: config order kept within a transcript
        return out

    def summary(self) -> str:
        """One line: how many transcripts were compared of how many listed, which were unreadable and why, what was left out."""
        listed = self.listed or list(dict.fromkeys([r["transcript"] for r in self.rows] + [e["transcript"] for e in self.errors]))
        return batch_line(listed, self.unreadable, self.left_out)

    def blocked(self) -> Blocked | None:
        """The constraint (invalid requests, failures) every config broke, where first, and the fix; None when a config kept all."""
        return blocked(self.rows)

    def ranking(self, objectives: Sequence[str] | None = None, *, seed: int = 0, resamples: int | None = None) -> Ranking:
        """The configs ranked over the sessions: mean with a bootstrap interval, wins / losses / ties (``lab.replayer.ranking``)."""
        from .ranking import DEFAULT_RESAMPLES, rank

        return rank(self.df, objectives, seed=seed, resamples=resamples or DEFAULT_RESAMPLES)

    @property
    def df(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame.from_records(self.records(), columns=self.columns)

    def to_dict(self) -> dict[str, Any]:
        stuck = self.blocked()
        return {"columns": self.columns, "rows": self.records(), "errors": list(self.errors), "notes": list(self.notes),
                "summary": self.summary(), "unreadable": dict(self.unreadable), "left_out": list(self.left_out),
                "warnings": {k: list(v) for k, v in self.warnings.items()}, "blocked": None if stuck is None else stuck.text}

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write as .csv, .parquet or .json, chosen by the extension; a failed write leaves nothing behind."""
        return write_table(self.df, self.to_dict, path, "table")


def _labelled(configs: Sequence[ConfigSpec], window: int | None) -> list[tuple[str, CompactionConfig]]:
    if isinstance(configs, (str, CompactionConfig)) or not isinstance(configs, Sequence):
        configs = [configs]
    if not configs:
        raise ConfigError("compare needs at least one config")
    out: list[tuple[str, CompactionConfig]] = []
    seen: dict[str, int] = {}
    for spec in configs:
        if isinstance(spec, tuple):
            if len(spec) != 2 or not isinstance(spec[0], str):
                raise ConfigError(f"a labelled config is (label, config), got {spec!r:.80}")
            label, cfg = spec[0], resolve_config(spec[1], window)
        else:
            cfg = resolve_config(spec, window)
            label = spec if isinstance(spec, str) else cfg.label
        seen[label] = seen.get(label, 0) + 1
        # Two configs with one label would be indistinguishable in the table.
        out.append((label if seen[label] == 1 else f"{label}#{seen[label]}", cfg))
    return out


def compare(
    transcript: Transcript | str | os.PathLike[str] | Sequence[Message],
    configs: Sequence[ConfigSpec],
    *,
    window: int | None = None,
    retention_each: bool = False,
    settings: SettingsLike = None,
    recorded_compactions: RecordedMode | None = None,
) -> CompareTable:
    """Replay one transcript under each config; one table row per config, reports kept.

    ``settings``: one ``ReplaySettings`` (or mapping) for every row, so each config is billed and timed alike.
    ``recorded_compactions`` ("undo" or "keep") overrides ``settings.recorded_compactions``.
    """
    labelled = _labelled(configs, window)
    rs = resolve_settings(settings, recorded_compactions)
    t = as_transcript(transcript)
    name = str(t.meta.source_path or t.meta.title or t.meta.session_id or "transcript")
    table = CompareTable(listed=[name])
    warned = import_warnings(t, replayed=True, use_timestamps=rs.use_timestamps)
    if warned:
        table.warnings[name] = warned
    for label, cfg in labelled:
        start = time.perf_counter()
        report = replay(t, cfg, settings=rs, retention_each=retention_each)
        table.rows.append(summary_row(report, name, label, time.perf_counter() - start))
        table.reports[label] = report
    return table


def folder_files(source: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The transcripts of a folder, a file, or a list of either (``folder_listing`` without what it left out)."""
    return folder_listing(source)[0]


def folder_listing(source: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> tuple[list[Path], list[str]]:
    """The transcripts of a folder, a file, or a list of either: each file, and each session folder, once; and
    what a folder held that is left out, named relative to it, so a batch run can say so.

    A folder is walked as ``lab.formats.session_folder`` walks one (hidden entries passed over, links not
    followed, no limit on its size), so a session folder inside it (an OpenHands V1 conversation, a Cline
    task, OpenCode storage) is one transcript, not the files it holds. Note and data files (``.md``,
    ``.txt``, ``.csv``, ``.parquet``, ``.py``) are left out, except a ``.md`` aider chat history
    (``session_folder.is_note_file``), and so are links (``NAME (link, not followed)``); any other file is
    listed, so one no format reads is an error row, not a silent gap.
    """
    from ..formats.session_folder import is_note_file, walk

    items = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    files: list[Path] = []
    left_out: list[str] = []
    for item in items:
        p = Path(item)
        if p.is_dir():
            counts = {"unreadable": 0, "links": 0}
            found = sorted(walk(p, counts, limit=0))
            for f, is_folder in found:
                if is_folder or not is_note_file(f):
                    files.append(f)
                else:
                    left_out.append(f.relative_to(p).as_posix())
            left_out += _passed_over(counts)
        elif p.exists():
            files.append(p)
        else:
            raise LabError(f"no such file or folder: {p}")
    return files, left_out


def _passed_over(counts: dict[str, int]) -> list[str]:
    """What the walk counted and did not list (links are not followed, a folder may refuse listing), as items."""
    out: list[str] = []
    if counts["links"]:
        out.append(f"{counts['links']} link(s), not followed")
    if counts["unreadable"]:
        out.append(f"{counts['unreadable']} folder(s) that could not be listed")
    return out


def _load(path: Path) -> tuple[Transcript | None, str | None]:
    """A file's transcript, or the one-line reason it cannot be read."""
    try:
        return as_transcript(str(path)), None
    except Exception as e:  # noqa: BLE001 - one bad file must not end a folder run
        return None, _reason(e)


def _reason(e: Exception) -> str:
    if isinstance(e, LabError):
        return str(e).splitlines()[0] if str(e) else type(e).__name__
    return f"internal error: {type(e).__name__}: {e}"


@dataclass
class Batch:
    """What a batch run (a compare, a sweep) reads of a folder, a file or a list of either.

    ``items`` holds (name, transcript or None, the one-line reason it cannot be read), in listing order;
    ``notes`` says where one file gave several transcripts; ``left_out``, what a folder held that is no
    transcript (``folder_listing``).
    """

    items: list[tuple[str, Transcript | None, str | None]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)

    @property
    def unreadable(self) -> dict[str, str]:
        """Name -> why, for every item that could not be read."""
        return {name: error or "cannot read" for name, t, error in self.items if t is None}

    def check_strict(self) -> None:
        """A ``TranscriptError`` naming every unreadable item: what ``strict=True`` makes of them, before any replay."""
        bad = self.unreadable
        if bad:
            listed = "; ".join(f"{name} ({why})" for name, why in list(bad.items())[:3]) + (f"; ... and {len(bad) - 3} more" if len(bad) > 3 else "")
            raise TranscriptError(f"{len(bad)} of {len(self.items)} transcript(s) unreadable (strict): {listed}")

    def warnings(self, *, use_timestamps: bool = True) -> dict[str, list[str]]:
        """Name -> the import warnings of each transcript read (``explain.import_warnings``), only those that have any."""
        out = {name: import_warnings(t, replayed=True, use_timestamps=use_timestamps) for name, t, _ in self.items if t is not None}
        return {name: w for name, w in out.items() if w}


def read_batch(source: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> Batch:
    """Every transcript of ``source`` (``folder_listing``): each file, each session folder, and each session of a
    file or store that holds several (an OpenHands evaluation output.jsonl, an aider chat history, Goose's
    sessions.db...), named ``FILE [ID]``.

    A file that holds several sessions is a batch of them: reading only its default session would compare
    one SWE-bench instance of an evaluation's hundreds and say nothing. Sub-agents' and empty sessions are
    left out (``session_choice.several``). A session that cannot be read is an item with its reason.
    """
    from ..formats.session_choice import read_each, several

    items = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    batch = Batch()
    for item in items:
        base = Path(item) if Path(item).is_dir() else None
        files, left_out = folder_listing(item)
        batch.left_out += left_out
        for f in files:
            name = f.relative_to(base).as_posix() if base is not None else str(f)
            try:
                found = several(f)
                if found is None:
                    t, error = _load(f)
                    batch.items.append((name, t, error))
                    continue
                batch.notes.append(found.describe(name))
                for info, got in read_each(f, found.reader, found.sessions):
                    named = f"{name} [{info.id}]"
                    if isinstance(got, Transcript):
                        batch.items.append((named, got, None))
                    else:
                        batch.items.append((named, None, _reason(got)))
            except Exception as e:  # noqa: BLE001 - one bad file must not end a folder run
                batch.items.append((name, None, _reason(e)))
    return batch


def compare_folder(
    source: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    configs: Sequence[ConfigSpec],
    *,
    processes: int = 2,
    window: int | None = None,
    settings: SettingsLike = None,
    recorded_compactions: RecordedMode | None = None,
    ray: str | None = None,
    progress: Progress | None = None,
    probe: ProbeSpec | None = None,
    session: str | None = None,
    strict: bool = False,
) -> CompareTable:
    """Replay every transcript of a folder under every config: one row per transcript x config.

    Each file is read once, here; the grid runs through ``run_grid``: ``processes`` local workers
    (1: in this process), or Ray tasks with ``ray="auto"`` or a cluster address (``processes`` unused).
    ``settings`` / ``recorded_compactions``: as in ``compare``, one for every row. ``session``: compare
    that session of a ``source`` holding several (a Goose or OpenCode store, an aider history; ids from
    ``lab.formats.sessions``); an id it does not hold raises, as ``load`` does. ``strict``: a transcript that
    cannot be read is a ``TranscriptError`` naming it, before anything is replayed (else an error row).
    """
    from .runner import run_grid  # runner builds its rows with summary_row from this module

    if not isinstance(processes, int) or processes < 1:
        raise ConfigError(f"processes must be >= 1, got {processes!r}")
    labelled = _labelled(configs, window)
    rs = resolve_settings(settings, recorded_compactions)
    if session is not None:
        if not isinstance(source, (str, os.PathLike)):
            raise ConfigError("session picks one session of one file or folder, not of a list of them")
        from ..formats import load

        # Read here, not caught: a session the source does not hold is the caller's mistake, said at once.
        name = f"{Path(source).name} [{session}]"
        batch = Batch(items=[(name, load(source, session=session), None)])
    else:
        batch = read_batch(source)
        if strict:
            batch.check_strict()
    names = [name for name, _, _ in batch.items]
    loaded = [(t, error) for _, t, error in batch.items]
    readable = [k for k, (t, _) in enumerate(loaded) if t is not None]
    transcripts = [t for t, _ in loaded if t is not None]
    grid = run_grid(transcripts, [cfg for _, cfg in labelled], names=[names[k] for k in readable],
                    labels=[label for label, _ in labelled], processes=processes, progress=progress, ray=ray, probe=probe,
                    settings=rs)
    at = {k: n for n, k in enumerate(readable)}
    table = CompareTable(notes=batch.notes, listed=names, unreadable=batch.unreadable, left_out=batch.left_out,
                         warnings=batch.warnings(use_timestamps=rs.use_timestamps))
    # File order, then config order, as the files were listed; an unreadable file gets one error per config.
    for k, name in enumerate(names):
        for i, (label, _) in enumerate(labelled):
            if k in at:
                cell = grid[i][at[k]]
                if cell.row is not None:
                    table.rows.append(cell.row)
                    continue
                error = cell.error or "no result"
            else:
                error = loaded[k][1] or "cannot read"
            table.errors.append({"transcript": name, "config": label, "error": error})
    return table
