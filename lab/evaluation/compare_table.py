"""Compare configs: one transcript under several configs, or a folder of transcripts under each.

``compare`` replays one transcript in this process and keeps every
``Report`` (``table.reports``); ``compare_folder`` reads each file once
(``batch.read_batch``) and runs every transcript x config through
``grid.run_grid`` (in this process, across local processes or on Ray) and
keeps only the table rows, each scored by the grid's scorers too.
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
(``lab.replayer.explain``), and ``table.ranking()`` ranks the configs over the
sessions (``lab.evaluation.ranking``).
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
from ..errors import ConfigError
from ..formats import load
from ..replayer.engine import replay
from ..replayer.explain import Blocked, batch_line, blocked, import_warnings
from ..replayer.recorded import RecordedMode
from ..replayer.report import Report
from ..replayer.settings import SettingsLike, resolve_settings
from ..replayer.inputs import ConfigLike, as_transcript, resolve_config
from .batch import Batch, read_batch
from .grid import run_grid
from .ranking import DEFAULT_RESAMPLES, Ranking, rank
from .rows import BASE_COLUMNS, summary_row
from .scorers import ProbeSpec, Scorer

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["CompareTable", "compare", "compare_folder", "ConfigSpec"]

ConfigSpec = str | CompactionConfig | tuple[str, ConfigLike]
Progress = Callable[[int, int], Any]


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
        """The configs ranked over the sessions: mean with a bootstrap interval, wins / losses / ties (``lab.evaluation.ranking``)."""
        return rank(self.df, objectives, seed=seed, resamples=resamples or DEFAULT_RESAMPLES)

    @property
    def df(self) -> pd.DataFrame:
        # Lazy: pandas is heavy, and a replay or a compare that only prints never needs it.
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
    scorers: Sequence[Scorer] = (),
    session: str | None = None,
    strict: bool = False,
) -> CompareTable:
    """Replay every transcript of a folder under every config: one row per transcript x config.

    Each file is read once, here; the grid runs through ``run_grid``: ``processes`` local workers
    (1: in this process), or Ray tasks with ``ray="auto"`` or a cluster address (``processes`` unused).
    ``settings`` / ``recorded_compactions``: as in ``compare``, one for every row. ``session``: compare
    that session of a ``source`` holding several (a Goose or OpenCode store, an aider history; ids from
    ``lab.formats.sessions``); an id it does not hold raises, as ``load`` does. ``probe`` and ``scorers`` add
    their columns to every row (``run_grid``). ``strict``: a transcript that
    cannot be read is a ``TranscriptError`` naming it, before anything is replayed (else an error row).
    """
    if not isinstance(processes, int) or processes < 1:
        raise ConfigError(f"processes must be >= 1, got {processes!r}")
    labelled = _labelled(configs, window)
    rs = resolve_settings(settings, recorded_compactions)
    if session is not None:
        if not isinstance(source, (str, os.PathLike)):
            raise ConfigError("session picks one session of one file or folder, not of a list of them")
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
                    scorers=scorers, settings=rs)
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
