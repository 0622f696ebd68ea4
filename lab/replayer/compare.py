"""Compare configs: one transcript under several configs, or a folder of transcripts under each.

``compare`` replays one transcript in this process and keeps every
``Report`` (``table.reports``); ``compare_folder`` reads each file once and
runs every transcript x config through ``runner.run_grid`` (in this process,
across local processes or on Ray) and keeps only the table rows.
Either way the table is tidy, one row per transcript x config, with flat
columns (``compactions_<strategy>`` per strategy seen), and writes itself to
CSV, Parquet or JSON by the file's extension. A file that cannot be read or
replayed becomes an entry in ``table.errors``; it never stops the others.
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
from ..errors import ConfigError, LabError
from .engine import replay
from .recorded import RecordedMode
from .report import Report
from .settings import SettingsLike, resolve_settings
from .support import ConfigLike, as_transcript, resolve_config

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from .runner import ProbeSpec

__all__ = ["CompareTable", "compare", "compare_folder", "summary_row", "folder_files", "read_batch", "Batch", "BASE_COLUMNS"]

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
    "first_request_kept",
    "recorded_compactions",
    "recorded_compactions_mode",
    "retention_score",
    "needed_later_recall",
    "recoverable_share",
    "cost",
    "cost_uncompacted",
    "cache_hit_ratio",
    "cache_hit_ratio_uncompacted",
    "replay_seconds",
]
# Files in a folder that are never transcripts.
_SKIP_SUFFIXES = (".md", ".txt", ".csv", ".parquet", ".py")


def summary_row(report: Report, transcript: str, config: str, seconds: float = 0.0) -> dict[str, Any]:
    """The flat comparison line of one report."""
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
        "first_request_kept": report.first_request_kept,
        "recorded_compactions": report.recorded_compactions,
        "recorded_compactions_mode": report.recorded_compactions_mode,
        "retention_score": report.retention_score,
        "needed_later_recall": report.needed_later_recall,
        "recoverable_share": report.recoverable_share,
        "cost": report.total_cost,
        "cost_uncompacted": report.total_cost_uncompacted,
        "cache_hit_ratio": report.cache_hit_ratio,
        "cache_hit_ratio_uncompacted": report.cache_hit_ratio_uncompacted,
        "replay_seconds": round(seconds, 4),
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

    @property
    def columns(self) -> list[str]:
        extra = sorted({k for r in self.rows for k in r if k not in BASE_COLUMNS})
        return BASE_COLUMNS + extra

    def records(self) -> list[dict[str, Any]]:
        """Rows with every column present: absent strategy counts are 0."""
        cols = self.columns
        return [{c: r.get(c, 0 if c.startswith("compactions_") else None) for c in cols} for r in self.rows]

    @property
    def df(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame.from_records(self.records(), columns=self.columns)

    def to_dict(self) -> dict[str, Any]:
        return {"columns": self.columns, "rows": self.records(), "errors": list(self.errors), "notes": list(self.notes)}

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
    name = t.meta.source_path or t.meta.title or t.meta.session_id or "transcript"
    table = CompareTable()
    for label, cfg in labelled:
        start = time.perf_counter()
        report = replay(t, cfg, settings=rs, retention_each=retention_each)
        table.rows.append(summary_row(report, str(name), label, time.perf_counter() - start))
        table.reports[label] = report
    return table


def folder_files(source: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The transcripts of a folder, a file, or a list of either: each file, and each session folder, once.

    A folder is walked as ``lab.formats.session_folder`` walks one (hidden entries passed over, links not
    followed, no limit on its size), so a session folder inside it (an OpenHands V1 conversation, a Cline
    task, OpenCode storage) is one transcript, not the files it holds. Note and data files (``.md``,
    ``.txt``, ``.csv``, ``.parquet``, ``.py``) are left out; any other file is listed, so one no format
    reads is an error row, not a silent gap.
    """
    from ..formats.session_folder import walk

    items = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    files: list[Path] = []
    for item in items:
        p = Path(item)
        if p.is_dir():
            counts = {"unreadable": 0, "links": 0}
            files.extend(sorted(f for f, is_folder in walk(p, counts, limit=0) if is_folder or f.suffix.lower() not in _SKIP_SUFFIXES))
        elif p.exists():
            files.append(p)
        else:
            raise LabError(f"no such file or folder: {p}")
    return files


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
    ``notes`` says where one file gave several transcripts.
    """

    items: list[tuple[str, Transcript | None, str | None]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def read_batch(source: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> Batch:
    """Every transcript of ``source`` (``folder_files``): each file, each session folder, and each session of a
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
        for f in folder_files(item):
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
) -> CompareTable:
    """Replay every transcript of a folder under every config: one row per transcript x config.

    Each file is read once, here; the grid runs through ``run_grid``: ``processes`` local workers
    (1: in this process), or Ray tasks with ``ray="auto"`` or a cluster address (``processes`` unused).
    ``settings`` / ``recorded_compactions``: as in ``compare``, one for every row. ``session``: compare
    that session of a ``source`` holding several (a Goose or OpenCode store, an aider history; ids from
    ``lab.formats.sessions``); an id it does not hold raises, as ``load`` does.
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
        names = [f"{Path(source).name} [{session}]"]
        loaded: list[tuple[Transcript | None, str | None]] = [(load(source, session=session), None)]
        notes: list[str] = []
    else:
        batch = read_batch(source)
        names = [name for name, _, _ in batch.items]
        loaded = [(t, error) for _, t, error in batch.items]
        notes = batch.notes
    readable = [k for k, (t, _) in enumerate(loaded) if t is not None]
    transcripts = [t for t, _ in loaded if t is not None]
    grid = run_grid(transcripts, [cfg for _, cfg in labelled], names=[names[k] for k in readable],
                    labels=[label for label, _ in labelled], processes=processes, progress=progress, ray=ray, probe=probe,
                    settings=rs)
    at = {k: n for n, k in enumerate(readable)}
    table = CompareTable(notes=notes)
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
