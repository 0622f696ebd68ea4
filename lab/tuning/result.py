"""``SweepResult``: every trial of a sweep, its Pareto front, and the config of any point.

    result.df                    one row per trial: trial, fold, state, feasible, pareto, chosen, error, broke, every score
                                 (each objective with its ``<objective>_heldout`` beside it), every swept field
    result.chosen                the recommended trial: the best held out (or, without folds, the best in-sample)
    result.recommendation()      "recommended: trial 7 ...: cost in-sample 0.0123, held-out 0.0131; ..."
    result.pareto                the feasible, non-dominated trials, best first by the first objective
    result.best(3)               the first three of those
    result.config(trial)         the full config of a trial (base config + its swept values)
    result.export_best(1, "best.toml")   the best point as a config file the agent loads (lab.load_config)
    result.write("sweep.parquet")        .parquet, .csv or .json, by the extension
    result.infeasible            why no trial is feasible (the constraint all broke, where, the fix), or None
    result.summary()             "12 of 14 swept; 2 unreadable: a.jsonl (why), ..."

The front is computed here from the table, not taken from Optuna, so a
result read back from a file, or built from a resumed study, ranks the same.

Held out (``lab.tuning.study``, folds): a trial's scores are over every session
swept; ``<objective>_heldout`` is set on the trials of each fold's own front and
is their score on the sessions that fold's search never saw (a sum such as cost
per as many sessions as the whole set, so it reads beside the in-sample column).
The recommended trial is the best of those held out: feasible on its held-out
sessions, then non-dominated on ``<objective>_heldout_rank`` (on its held-out
sessions, the share of all the sweep's trials it does at least as well as),
then best by the first objective's rank. Ranks, not the raw held-out scores:
folds hold out different sessions, and a session's cost follows its length, so
raw scores would recommend the fold whose held-out sessions are cheapest.
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
from ..evaluation.objectives import OBJECTIVES, SCORES
from ..replayer.explain import batch_line

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["SweepResult", "non_dominated", "LEAD_COLUMNS"]

# ``broke``: what an infeasible trial broke, how often and first where ("invalid_requests 3 (a.jsonl: request 2 ...)").
# ``fold``: which fold's search drew the trial (None without folds); ``chosen``: the recommended trial.
LEAD_COLUMNS = ["trial", "fold", "state", "feasible", "pareto", "chosen", "error", "broke"]
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
    # Why no trial is feasible, when none is: the constraint every trial broke, where, and what would fix it.
    infeasible: str | None = None
    # Every transcript the sweep was given, read or not, in listing order; what a folder held that is no transcript.
    listed: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    # Transcript name -> why it could not be read (``skipped`` says the same as "NAME: why" lines).
    unreadable: dict[str, str] = field(default_factory=dict)
    # Transcript name -> its import's warnings (``lab.replayer.explain.import_warnings``), for the front ends to show.
    warnings: dict[str, list[str]] = field(default_factory=dict)
    # How many folds the sessions were held out in (0: none), and each fold's held-out sessions.
    folds: int = 0
    held_out: list[list[str]] = field(default_factory=list)

    def summary(self) -> str:
        """One line on what the sweep read: "12 of 14 swept; 2 unreadable: a.jsonl (why), ...; left out, not transcripts: ..."."""
        return batch_line(self.listed or self.transcripts + list(self.unreadable), self.unreadable, self.left_out, "swept")

    @property
    def directions(self) -> list[str]:
        return [OBJECTIVES[o].direction for o in self.objectives]

    @property
    def columns(self) -> list[str]:
        scores: list[str] = []
        for s in SCORES:
            scores += [s.name, f"{s.name}_heldout", f"{s.name}_heldout_rank"] if s.name in self.objectives else [s.name]
        return LEAD_COLUMNS + scores + self.params

    def _rows(self, records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        front = {r["trial"] for r in self._front()}
        chosen = self._chosen()
        pick = None if chosen is None else chosen["trial"]
        return [{**{c: r.get(c) for c in self.columns}, "pareto": r["trial"] in front, "chosen": r["trial"] == pick} for r in records]

    def _sign(self) -> list[float]:
        return [1.0 if d == "minimize" else -1.0 for d in self.directions]

    def _heldout(self) -> list[dict[str, Any]]:
        """The trials with held-out scores (those on a fold's own front)."""
        return [r for r in self.records if r.get("state") == "complete" and all(r.get(f"{o}_heldout") is not None for o in self.objectives)]

    def _chosen(self) -> dict[str, Any] | None:
        """The recommended trial: the best held out when folds scored any, else the first of the in-sample front."""
        if not self.folds:
            front = self._front()
            return front[0] if front else None
        ok = [r for r in self._heldout() if r.get("_heldout_keeps", True)]
        # By held-out rank where the sweep gave one (folds hold out different sessions: raw scores do not compare across
        # folds), else by the held-out scores themselves.
        ranked = all(r.get(f"{o}_heldout_rank") is not None for r in ok for o in self.objectives)

        def key(r: dict[str, Any]) -> list[float]:
            if ranked:
                return [-float(r[f"{o}_heldout_rank"]) for o in self.objectives]
            return [s * float(r[f"{o}_heldout"]) for s, o in zip(self._sign(), self.objectives, strict=True)]

        best = [ok[i] for i in non_dominated([key(r) for r in ok])]
        best.sort(key=lambda r: (key(r), r["trial"]))
        return best[0] if best else None

    @property
    def chosen(self) -> dict[str, Any] | None:
        """The recommended trial's row (as in ``df``), or None when no trial can be recommended."""
        chosen = self._chosen()
        return None if chosen is None else self._rows([chosen])[0]

    def insample(self, trial: int) -> dict[str, float | None]:
        """A trial's objectives on the sessions its search saw (every session without folds; sums per the whole set)."""
        record = next((r for r in self.records if r["trial"] == trial), None)
        if record is None:
            raise ConfigError(f"no trial {trial} in this sweep")
        seen = record.get("_insample") or record
        return {o: seen.get(o) for o in self.objectives}

    def recommendation(self) -> str:
        """One line on the recommended trial: "recommended: trial 7 (...): cost in-sample X, held-out Y; ...".

        Without folds it says the held-out score was not measured, so no in-sample number passes for a forecast.
        """
        chosen = self._chosen()
        if chosen is None:
            if self.folds and self._heldout():
                return ("no recommendation: every trial on a fold's front broke a constraint on its held-out sessions "
                        "(see the *_heldout columns)")
            return "no recommendation: no feasible trial"
        seen = self.insample(int(chosen["trial"]))
        if not self.folds:
            parts = [f"{o} in-sample {_num(seen[o])}" for o in self.objectives]
            return (f"recommended: trial {chosen['trial']} (best in-sample by {self.objectives[0]}): " + "; ".join(parts)
                    + "; held-out not measured (no folds: one session, or folds 0)")
        fold = int(chosen["fold"]) if chosen.get("fold") is not None else 0
        out = self.held_out[fold - 1] if 0 < fold <= len(self.held_out) else []
        n = len(self.transcripts)
        parts = [f"{o} in-sample {_num(seen[o])}, held-out {_num(chosen[f'{o}_heldout'])}{_rank(chosen.get(f'{o}_heldout_rank'))}"
                 for o in self.objectives]
        return (f"recommended: trial {chosen['trial']} (best held-out; fold {fold} of {self.folds}, searched on {n - len(out)} of {n} "
                f"session(s), held out: {', '.join(out)}): " + "; ".join(parts))

    @property
    def df(self) -> pd.DataFrame:
        """Every trial, in trial order; ``pareto`` marks the points on the front."""
        import pandas as pd

        return pd.DataFrame.from_records(self._rows(self.records), columns=self.columns)

    def _front(self) -> list[dict[str, Any]]:
        """The feasible, non-dominated trials on the table's scores (every session), best first by the first objective."""
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
        return _write_config(self.config(int(front[int(n) - 1]["trial"])), target, fmt)

    def export_chosen(self, path: str | os.PathLike[str] = "chosen.json") -> Path:
        """Write the recommended trial (``chosen``) as a config file; .json, .yaml or .toml by the extension."""
        target = Path(path)
        fmt = _FORMATS.get(target.suffix.lower())
        if fmt is None:
            raise ConfigError(f"cannot write a config to {target.name!r}: use a .json, .yaml or .toml file")
        chosen = self._chosen()
        if chosen is None:
            raise ConfigError(self.recommendation())
        return _write_config(self.config(int(chosen["trial"])), target, fmt)

    def to_dict(self) -> dict[str, Any]:
        chosen = self._chosen()
        return {
            "objectives": self.objectives, "directions": self.directions, "seed": self.seed, "params": self.params,
            "transcripts": self.transcripts, "skipped": self.skipped, "base": self.base,
            "listed": self.listed, "unreadable": self.unreadable, "left_out": self.left_out, "warnings": self.warnings, "infeasible": self.infeasible,
            "columns": self.columns, "trials": self._rows(self.records),
            "pareto": [int(r["trial"]) for r in self._front()],
            "folds": self.folds, "held_out": self.held_out,
            "chosen": None if chosen is None else int(chosen["trial"]),
            "recommendation": self.recommendation(),
        }

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Every trial as .parquet, .csv or .json (the JSON also holds the base config, objectives and front)."""
        return write_table(self.df, self.to_dict, path, "sweep")


def _write_config(cfg: CompactionConfig, target: Path, fmt: str) -> Path:
    try:
        write_text_atomic(target, dump_config(cfg, fmt))  # type: ignore[arg-type]
    except OSError as e:
        raise LabError(f"cannot write {target}: {e.strerror or e}") from None
    return target


def _rank(share: Any) -> str:
    return "" if share is None else f" (as good as {float(share):.0%} of all trials on those sessions)"


def _num(value: Any) -> str:
    return "n/a" if value is None else f"{float(value):.4g}"
