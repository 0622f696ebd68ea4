"""Rank configs over sessions with the uncertainty said: bootstrap intervals, paired differences, wins / losses / ties.

    ranking = rank(table.df)                 # a compare table: one row per transcript x config
    ranking.df                               # per config and objective: mean, 95% interval, sessions, left out, wins / losses / ties
    ranking.pairs                            # per pair of configs and objective: paired difference, its interval, distinguishable
    print(ranking.summary())                 # best first, with "not distinguishable" where the paired interval spans 0
    ranking.write("ranking.csv")             # .csv, .parquet or .json

Why it is built this way:

- **A session weighs the same.** Every mean is over sessions, one value each,
  whatever their length: a long session must not decide a ranking alone.
- **Nothing needed is no score.** A session where nothing was needed later has
  no recall (None or NaN in the table); it is left out of that config's mean
  and counted, so "mean over 7 sessions; 2 with nothing needed left out" says
  what the number rests on.
- **Sessions are the unit of chance.** The 95% interval resamples sessions
  (with replacement, ``resamples`` times, seeded), not requests: the next
  session is what a user asks about.
- **Paired.** Two configs replayed the same sessions, so they are compared
  session by session: the paired difference's interval is much narrower than
  two overlapping intervals suggest, and when it spans 0 the two are "not
  distinguishable" on these sessions. Wins / losses / ties count the sessions
  where one config did better, worse or the same as each other config.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from collections.abc import Sequence

import numpy as np

from ..atomic import write_table
from ..errors import ConfigError
from .objectives import direction as score_direction

# pandas is imported where a frame is built, not here: it is heavy, and a compare that only prints never ranks.
if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["rank", "Ranking", "RANK_OBJECTIVES", "RANKING_COLUMNS", "PAIR_COLUMNS", "DEFAULT_RESAMPLES"]

# What a ranking scores by default, each where the table has the column (content_recall once replays report it).
RANK_OBJECTIVES = ("needed_later_recall", "content_recall", "cost")
DEFAULT_RESAMPLES = 2000
RANKING_COLUMNS = ["objective", "direction", "rank", "config", "mean", "low", "high", "sessions", "left_out", "wins", "losses", "ties",
                   "broken_sessions"]
PAIR_COLUMNS = ["objective", "config", "other", "sessions", "difference", "low", "high", "distinguishable", "wins", "losses", "ties"]
# Two values this close are a tie: replays are deterministic, but sums of floats may differ in the last bits.
_TIE = 1e-9


@dataclass
class Ranking:
    """Per config and objective, the mean over sessions with its interval and wins / losses / ties; per pair, the paired difference."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    pair_rows: list[dict[str, Any]] = field(default_factory=list)
    level: float = 0.95
    seed: int = 0
    resamples: int = DEFAULT_RESAMPLES
    # Sessions in the table (every transcript with at least one row that ran).
    sessions: int = 0

    @property
    def df(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame.from_records(self.rows, columns=RANKING_COLUMNS)

    @property
    def pairs(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame.from_records(self.pair_rows, columns=PAIR_COLUMNS)

    def pair(self, objective: str, config: str, other: str) -> dict[str, Any]:
        """The paired comparison of ``config`` against ``other`` on ``objective`` (difference = config - other)."""
        for p in self.pair_rows:
            if (p["objective"], p["config"], p["other"]) == (objective, config, other):
                return p
        raise ConfigError(f"no pair {config!r} / {other!r} on {objective!r} in this ranking")

    def indistinguishable(self, objective: str) -> list[tuple[str, str]]:
        """The pairs of configs (each once, in ranking order) whose paired difference's interval spans 0."""
        order = {r["config"]: r["rank"] for r in self.rows if r["objective"] == objective}
        out = []
        for p in self.pair_rows:
            if p["objective"] == objective and not p["distinguishable"] and order.get(p["config"], 0) < order.get(p["other"], 0):
                out.append((p["config"], p["other"]))
        return out

    def summary(self) -> str:
        """Per objective, the configs best first with their interval and record, then the pairs that are not distinguishable."""
        pct = f"{self.level:.0%}"
        lines: list[str] = []
        for objective in dict.fromkeys(r["objective"] for r in self.rows):
            rows = [r for r in self.rows if r["objective"] == objective]
            better = "higher" if rows[0]["direction"] == "maximize" else "lower"
            lines.append(f"{objective} ({better} is better): mean over sessions, {pct} bootstrap interval (sessions resampled, seed {self.seed})")
            for r in rows:
                where = f"[{_num(r['low'])}, {_num(r['high'])}]" if r["low"] is not None else "(no interval: fewer than 2 sessions)"
                # A config whose requests failed or were invalid is cheap for a reason: say so beside its rank.
                broke = f"; {r['broken_sessions']} session(s) with failed or invalid requests" if r.get("broken_sessions") else ""
                lines.append(f"  {r['rank']}. {r['config']}: {_num(r['mean'])} {where}, {_basis(r, objective)}; "
                             f"wins {r['wins']}, losses {r['losses']}, ties {r['ties']}{broke}")
            for a, b in self.indistinguishable(objective):
                p = self.pair(objective, a, b)
                why = (f"paired difference {_num(p['difference'], signed=True)} [{_num(p['low'], signed=True)}, {_num(p['high'], signed=True)}] "
                       f"over {p['sessions']} session(s) spans 0") if p["low"] is not None else f"{p['sessions']} common session(s)"
                lines.append(f"  not distinguishable: {a} and {b} ({why})")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "seed": self.seed, "resamples": self.resamples, "sessions": self.sessions,
                "columns": RANKING_COLUMNS, "rows": self.rows, "pairs": self.pair_rows, "summary": self.summary()}

    def write(self, path: str | os.PathLike[str]) -> Path:
        """The per-config table as .csv, .parquet or .json (the JSON also holds the pairs and the summary)."""
        return write_table(self.df, self.to_dict, path, "ranking")


def _num(value: Any, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{float(value):+.4g}" if signed else f"{float(value):.4g}"


def _basis(row: dict[str, Any], objective: str) -> str:
    text = f"mean over {row['sessions']} session(s)"
    if row["left_out"]:
        what = "with nothing needed" if "recall" in objective else f"without a {objective}"
        text += f"; {row['left_out']} {what} left out"
    return text


def _value(v: Any) -> float | None:
    if v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if f != f else f


def _interval(values: np.ndarray, rng: np.random.Generator, resamples: int, level: float) -> tuple[float | None, float | None]:
    """The percentile bootstrap interval of the mean of ``values`` (one per session); None below 2 sessions."""
    if len(values) < 2:
        return None, None
    picks = rng.integers(0, len(values), size=(resamples, len(values)))
    means = values[picks].mean(axis=1)
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(means, [tail, 100.0 - tail])
    return float(low), float(high)


def _better(a: float, b: float, sign: float) -> int:
    """1 when ``a`` beats ``b`` (``sign`` 1: lower is better, -1: higher), -1 when it loses, 0 for a tie."""
    if abs(a - b) <= _TIE * max(1.0, abs(a), abs(b)):
        return 0
    return 1 if sign * (a - b) < 0 else -1


def rank(
    table: Any,
    objectives: Sequence[str] | None = None,
    *,
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
    level: float = 0.95,
    session_column: str = "transcript",
    config_column: str = "config",
) -> Ranking:
    """Rank the configs of a compare table (a ``CompareTable``, its ``df``, or rows) on each objective; see the module docstring.

    ``objectives``: score columns (default: ``RANK_OBJECTIVES`` the table has). Rows with an ``error`` are not
    scored. The same ``seed`` gives the same intervals.
    """
    _check(seed, resamples, level)
    df = _frame(table, session_column, config_column)
    names = list(objectives) if objectives else [o for o in RANK_OBJECTIVES if o in df.columns]
    if not names:
        raise ConfigError(f"the table has none of the columns a ranking scores by default ({', '.join(RANK_OBJECTIVES)}); name them")
    for name in names:
        if name not in df.columns:
            raise ConfigError(f"no column {name!r} in the table to rank by")
    configs = list(dict.fromkeys(str(c) for c in df[config_column]))
    broken = _broken_sessions(df, session_column, config_column)
    sessions = list(dict.fromkeys(str(s) for s in df[session_column]))
    out = Ranking(level=float(level), seed=seed, resamples=resamples, sessions=len(sessions))
    for k, name in enumerate(names):
        sign = 1.0 if score_direction(name) == "minimize" else -1.0
        # session x config -> value (None: not measured, e.g. nothing was needed); a repeated row keeps the first.
        grid: dict[str, dict[str, float | None]] = {c: {} for c in configs}
        for s, c, v in zip(df[session_column], df[config_column], df[name], strict=True):
            grid[str(c)].setdefault(str(s), _value(v))
        # The same draws for every config (and every pair): two configs with the same values get the same interval.
        rows = [_config_row(name, sign, c, grid, sessions, configs, np.random.default_rng([seed, k, 0]), resamples, float(level))
                for c in configs]
        ranked = sorted(rows, key=lambda r: (r["mean"] is None, sign * (r["mean"] or 0.0), configs.index(r["config"])))
        for position, r in enumerate(ranked, 1):
            r["rank"] = position
            r["broken_sessions"] = broken.get(r["config"], 0)
        out.rows += ranked
        for i, a in enumerate(configs):
            for j, b in enumerate(configs):
                if i != j:
                    out.pair_rows.append(_pair_row(name, sign, a, b, grid, sessions, np.random.default_rng([seed, k, 1]), resamples, float(level)))
    return out


def _check(seed: int, resamples: int, level: float) -> None:
    if not isinstance(resamples, int) or isinstance(resamples, bool) or resamples < 100:
        raise ConfigError(f"resamples must be a whole number >= 100, got {resamples!r}")
    if not 0.5 <= float(level) < 1.0:
        raise ConfigError(f"level must be in [0.5, 1), got {level!r}")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ConfigError(f"seed must be a whole number >= 0, got {seed!r}")


def _frame(table: Any, session_column: str, config_column: str) -> pd.DataFrame:
    """The rows that ran, as a DataFrame: from a CompareTable, its df, or a list of row mappings."""
    import pandas as pd

    df = getattr(table, "df", table)
    df = df if isinstance(df, pd.DataFrame) else pd.DataFrame.from_records(list(df))
    for col in (session_column, config_column):
        if col not in df.columns:
            raise ConfigError(f"a ranking needs a {col!r} column (one row per session x config, as compare writes)")
    return df[df["error"].isna()] if "error" in df.columns else df


def _broken_sessions(df: Any, session_column: str, config_column: str) -> dict[str, int]:
    """Per config, the sessions where it had a failed or an invalid request (0 where the table has neither column)."""
    out: dict[str, int] = {}
    cols = [c for c in ("failures", "invalid_requests") if c in df.columns]
    for _, row in df.iterrows():
        if any((_value(row[c]) or 0) > 0 for c in cols):
            out[str(row[config_column])] = out.get(str(row[config_column]), 0) + 1
    return out


def _config_row(name: str, sign: float, config: str, grid: dict[str, dict[str, float | None]], sessions: list[str],
                configs: list[str], rng: np.random.Generator, resamples: int, level: float) -> dict[str, Any]:
    mine = grid[config]
    values = np.array([v for s in sessions if (v := mine.get(s)) is not None], dtype=float)
    low, high = _interval(values, rng, resamples, level)
    record = {"wins": 0, "losses": 0, "ties": 0}
    for other in configs:
        if other == config:
            continue
        for s in sessions:
            a, b = mine.get(s), grid[other].get(s)
            if a is not None and b is not None:
                record[("ties", "wins", "losses")[_better(a, b, sign)]] += 1
    ran = sum(1 for s in sessions if s in mine)
    return {"objective": name, "direction": "minimize" if sign > 0 else "maximize", "rank": 0, "config": config,
            "mean": float(values.mean()) if len(values) else None, "low": low, "high": high,
            "sessions": int(len(values)), "left_out": ran - int(len(values)), **record}


def _pair_row(name: str, sign: float, a: str, b: str, grid: dict[str, dict[str, float | None]], sessions: list[str],
              rng: np.random.Generator, resamples: int, level: float) -> dict[str, Any]:
    """``a`` against ``b`` over the sessions both have a value for; the interval is of the mean of a - b."""
    pairs = [(x, y) for s in sessions if (x := grid[a].get(s)) is not None and (y := grid[b].get(s)) is not None]
    diffs = np.array([x - y for x, y in pairs], dtype=float)
    # Resampled by session with the same draws for (a, b) and (b, a), so their intervals mirror each other.
    low, high = _interval(diffs, rng, resamples, level)
    if len(diffs) and not diffs.any():
        low, high = 0.0, 0.0  # identical on every session: the interval is the point 0
    record = {"wins": 0, "losses": 0, "ties": 0}
    for x, y in pairs:
        record[("ties", "wins", "losses")[_better(x, y, sign)]] += 1
    distinguishable = low is not None and high is not None and (low > 0 or high < 0)
    return {"objective": name, "config": a, "other": b, "sessions": len(pairs),
            "difference": float(diffs.mean()) if len(diffs) else None, "low": low, "high": high,
            "distinguishable": bool(distinguishable), **record}
