"""``SweepResult``: every trial of a sweep, its Pareto front, and the config of any point.

    result.df                    one row per trial: trial, state, feasible, pareto, error, every score, every swept field
    result.pareto                the feasible, non-dominated trials, best first by the first objective
    result.best(3)               the first three of those
    result.config(trial)         the full config of a trial (base config + its swept values)
    result.export_best(1, "best.toml")   the best point as a config file the agent loads (lab.load_config)
    result.write("sweep.parquet")        .parquet, .csv or .json, by the extension

The front is computed here from the table, not taken from Optuna, so a
result read back from a file, or built from a resumed study, ranks the same.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from collections.abc import Sequence

from ..atomic import write_table, write_text_atomic
from ..core.config import CompactionConfig, dump_config, parse_config
from ..errors import ConfigError, LabError
from .objectives import OBJECTIVES, SCORES

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["SweepResult", "non_dominated", "LEAD_COLUMNS"]

LEAD_COLUMNS = ["trial", "state", "feasible", "pareto", "error"]
_FORMATS = {".json": "json", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml"}


def non_dominated(points: Sequence[Sequence[float]]) -> list[int]:
    """Indices of the points no other point dominates (all objectives to be minimised)."""
    keep = []
    for i, p in enumerate(points):
        dominated = any(
            all(q[k] <= p[k] for k in range(len(p))) and any(q[k] < p[k] for k in range(len(p)))
            for j, q in enumerate(points) if j != i
        )
        if not dominated:
            keep.append(i)
    return keep


@dataclass
class SweepResult:
    """The trials of one sweep (in trial order) and what is needed to rebuild any trial's config."""

    records: list[dict[str, Any]]
    objectives: list[str]
    params: list[str]
    base: dict[str, Any]
    seed: int = 0
    transcripts: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def directions(self) -> list[str]:
        return [OBJECTIVES[o].direction for o in self.objectives]

    @property
    def columns(self) -> list[str]:
        return LEAD_COLUMNS + [s.name for s in SCORES] + self.params

    def _rows(self, records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        front = {r["trial"] for r in self._front()}
        return [{**{c: r.get(c) for c in self.columns}, "pareto": r["trial"] in front} for r in records]

    @property
    def df(self) -> pd.DataFrame:
        """Every trial, in trial order; ``pareto`` marks the points on the front."""
        import pandas as pd

        return pd.DataFrame.from_records(self._rows(self.records), columns=self.columns)

    def _front(self) -> list[dict[str, Any]]:
        ok = [r for r in self.records if r.get("state") == "complete" and r.get("feasible") and all(r.get(o) is not None for o in self.objectives)]
        sign = [1.0 if d == "minimize" else -1.0 for d in self.directions]
        points = [[s * float(r[o]) for s, o in zip(sign, self.objectives, strict=True)] for r in ok]
        front = [ok[i] for i in non_dominated(points)]
        # Best first by the first objective, then the next ones, then the older trial.
        return sorted(front, key=lambda r: ([s * float(r[o]) for s, o in zip(sign, self.objectives, strict=True)], r["trial"]))

    @property
    def pareto(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame.from_records(self._rows(self._front()), columns=self.columns)

    def best(self, n: int = 5) -> pd.DataFrame:
        """The first ``n`` points of the front (best first by the first objective)."""
        return self.pareto.head(max(0, int(n)))

    def config(self, trial: int) -> CompactionConfig:
        """The full config trial ``trial`` ran: the base config with its swept values, labelled by the trial."""
        record = next((r for r in self.records if r["trial"] == trial), None)
        if record is None:
            raise ConfigError(f"no trial {trial} in this sweep (trials 0-{len(self.records) - 1})")
        data = json.loads(json.dumps(self.base))
        for path in self.params:
            if record.get(path) is None:
                continue
            node = data
            parts = path.split(".")
            for part in parts[:-1]:
                node = node[part]
            node[parts[-1]] = record[path]
        data["label"] = f"sweep-trial-{trial}"
        return parse_config(data)

    def export_best(self, n: int = 1, path: str | os.PathLike[str] = "best.json") -> Path:
        """Write the ``n``-th point of the front (1 = best) as a config file; .json, .yaml or .toml by the extension."""
        target = Path(path)
        fmt = _FORMATS.get(target.suffix.lower())
        if fmt is None:
            raise ConfigError(f"cannot write a config to {target.name!r}: use a .json, .yaml or .toml file")
        front = self._front()
        if not front:
            raise ConfigError("the sweep has no feasible trial to export (every trial failed or broke a constraint)")
        if not 1 <= int(n) <= len(front):
            raise ConfigError(f"--export-best must be between 1 and {len(front)} (the points on the Pareto front), got {n}")
        cfg = self.config(int(front[int(n) - 1]["trial"]))
        try:
            write_text_atomic(target, dump_config(cfg, fmt))  # type: ignore[arg-type]
        except OSError as e:
            raise LabError(f"cannot write {target}: {e.strerror or e}") from None
        return target

    def to_dict(self) -> dict[str, Any]:
        return {
            "objectives": self.objectives, "directions": self.directions, "seed": self.seed, "params": self.params,
            "transcripts": self.transcripts, "skipped": self.skipped, "base": self.base,
            "columns": self.columns, "trials": self._rows(self.records),
            "pareto": [int(r["trial"]) for r in self._front()],
        }

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Every trial as .parquet, .csv or .json (the JSON also holds the base config, objectives and front)."""
        return write_table(self.df, self.to_dict, path, "sweep")
