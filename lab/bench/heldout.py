"""Bench section "heldout": the ``lab`` preset chosen by leave-one-session-out, scored on the session it never saw.

A config picked on a set of sessions scores higher on that set than on the
next session (issue 28: ``lab`` was first on the corpus it was tuned on and in
the middle of the pack on 19 unseen sessions). So this section does not ask
"which config is best here" but "how well does the *procedure* that picks
``lab`` do on a session it did not pick with":

- candidates: a small, explicit grid of ``lab`` variants (``GRID``: the spill
  threshold, the summary watermark, the verbatim tail's share of the window and
  idle clearing on or off, the knobs the ``lab`` description argues for);
- sessions: every corpus session (as compare reads them) and a few generated
  long sessions (``LONG_SESSIONS``, each at least ``LONG_MIN_TOKENS`` tokens in
  all, with planted content dependencies, so 128k is a window that bites and
  content recall has signal);
- each (config, session, window) is replayed once (``run_grid``, local
  processes); every choice below is made on that table, never by a re-replay;
- at each window, for each session: ``choose`` picks among the variants on the
  *other* sessions (0 failures and 0 invalid requests, then the highest mean
  ``content_recall``, variants within ``TIE`` of the best broken by the lower
  mean cost), and the pick is scored on the held-out session.

Printed per preset and window: the in-sample mean (the config scored on the
sessions it was chosen on) beside the held-out mean. For ``lab`` the in-sample
config is the variant chosen on every session; held-out, each session is
scored by the variant chosen without it. The seed and peer presets are fixed
configs, chosen on no session here, so their held-out figure *is* the
in-sample one (printed as ``=``). Content recall is averaged over the sessions
with at least ``content.THIN`` needed items (fewer are too thin to rank by;
``content(all)`` averages every session with any); names recall over the
sessions with a needed name; cost is the mean per session. Then the verdict
of issue 28's target, at every window, against ``minicode``, ``mewcode`` and
``codex``.
"""

from __future__ import annotations

import itertools
import math
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from . import corpus_files, register_section, sessions_of
from ..core.config import parse_config, with_value
from ..core.presets import preset
from ..generator import estimate_tokens, generate
from ..evaluation.grid import run_grid

__all__ = [
    "bench_heldout", "choose", "loso", "summarise", "long_sessions", "lab_variants", "target_misses",
    "GRID", "QUICK_GRID", "PEERS", "SEEDS", "HELDOUT_WINDOWS", "TIE", "STABLE", "COST_MARGIN", "LONG_SESSIONS", "LONG_MIN_TOKENS",
]

HELDOUT_WINDOWS = (32_000, 64_000, 128_000)
# The presets the target names, and the other peers printed beside them.
SEEDS = ("minicode", "mewcode", "codex")
PEERS = (*SEEDS, "claude-code", "openhands-masking", "anthropic-context-editing")
# The lab knobs varied, each a dotted config path with the values tried (today's value among them). Kept small
# on purpose: every combination is replayed on every session at every window.
GRID: dict[str, tuple[Any, ...]] = {
    "spill.threshold": (5000, 15_000, 50_000),
    "watermark.ratio": (0.7, 0.8),
    "summary.tail_window_share": (0.25, 0.4),
    "microcompact.enabled": (True, False),
    # MewCode's recovery attachment after a rule-based summary: the files read last, back in the context.
    "summary.attachment_for_rules": (False, True),
}
# ``--quick``: two spill thresholds, idle clearing on/off, one window, no long sessions.
QUICK_GRID: dict[str, tuple[Any, ...]] = {"spill.threshold": (5000, 50_000), "microcompact.enabled": (True, False)}
# Content recall within this of the best counts as a tie (0.5 points), broken by cost.
TIE = 0.005
# A variant picked on at least this share of the folds is "the" held-out choice.
STABLE = 0.8
# The target's cost margin over the cheapest of the three seeds.
COST_MARGIN = 0.10
LONG_SESSIONS = 3
LONG_MIN_TOKENS = 300_000
# As the quality section: one counter for every config, so tokens and costs share one unit.
COUNTER = "calibrated"
_SHORT = {"spill.threshold": "spill", "watermark.ratio": "wm", "summary.tail_window_share": "tail", "microcompact.enabled": "idle", "summary.attachment_for_rules": "attach"}

Row = Mapping[str, Any]
# config label -> session name -> that replay's compare row (only the fields below are read).
Table = Mapping[str, Mapping[str, Row]]


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarise(rows: Sequence[Row]) -> dict[str, Any]:
    """Means and sums over one config's rows: each session weighs the same; a session with nothing needed is left
    out of that recall's mean (and counted in ``*_sessions``)."""
    ranked = [r["content_recall"] for r in rows if r.get("content_recall") is not None and not r.get("content_thin", False)]
    anyc = [r["content_recall"] for r in rows if r.get("content_recall") is not None]
    names = [r["needed_later_recall"] for r in rows if r.get("needed_later_recall") is not None]
    return {
        "sessions": len(rows),
        "content_recall": _mean(ranked),
        "content_sessions": len(ranked),
        "content_recall_all": _mean(anyc),
        "needed_later_recall": _mean(names),
        "names_sessions": len(names),
        "cost": _mean([float(r["cost"]) for r in rows]),
        "failures": sum(int(r["failures"]) for r in rows),
        "invalid": sum(int(r["invalid_requests"]) for r in rows),
    }


def choose(table: Table, candidates: Sequence[str], sessions: Sequence[str], by: str = "content") -> str:
    """The candidate the rule picks on ``sessions`` alone: 0 failures and 0 invalid requests (if none has both,
    the fewest), then (``by="content"``) the highest mean content recall (sessions too thin to rank by left out; a
    candidate with no figure ranks last), and among those within ``TIE`` of the best the lowest mean cost; then
    candidate order. ``by="cost"``: the lowest mean cost among the clean ones (the lean pick)."""
    if not candidates:
        raise ValueError("choose needs at least one candidate")
    if by not in ("content", "cost"):
        raise ValueError(f"choose ranks by 'content' or 'cost', got {by!r}")
    stats = {c: summarise([table[c][s] for s in sessions]) for c in candidates}
    broken = {c: stats[c]["failures"] + stats[c]["invalid"] for c in candidates}
    least = min(broken.values())
    near = [c for c in candidates if broken[c] == least]
    if by == "content":
        recall = {c: stats[c]["content_recall"] if stats[c]["content_recall"] is not None else float("-inf") for c in near}
        best = max(recall.values())
        near = [c for c in near if recall[c] >= best - TIE]
    return min(near, key=lambda c: (stats[c]["cost"], candidates.index(c)))


def loso(table: Table, candidates: Sequence[str], keys: Sequence[str], group: Mapping[str, str] | None = None,
         by: str = "content") -> dict[str, str]:
    """Leave-one-session-out: for each session, the candidate ``choose`` picks on the rows of every other session.

    ``keys`` are the table's row keys; ``group`` maps a key to its session (default: each key is a session), so
    one session's rows at several windows are held out together and one config is chosen for every window."""
    of = group or {k: k for k in keys}
    out: dict[str, str] = {}
    for held in dict.fromkeys(of[k] for k in keys):
        out[held] = choose(table, candidates, [k for k in keys if of[k] != held], by=by)
    return out


def _setting(cfg: dict[str, Any], path: str, value: Any) -> None:
    section, key = path.split(".")
    cfg[section][key] = value


def _variant_label(values: Mapping[str, Any]) -> str:
    parts = []
    for path, v in values.items():
        shown = ("on" if v else "off") if isinstance(v, bool) else v
        parts.append(f"{_SHORT.get(path, path)}={shown}")
    return "lab[" + " ".join(parts) + "]"


def lab_variants(grid: Mapping[str, Sequence[Any]]) -> list[tuple[str, Any]]:
    """Every combination of ``grid`` applied to the ``lab`` preset, as (label, config), today's ``lab`` first."""
    base = preset("lab").model_dump(mode="json")
    today = {path: base[path.split(".")[0]][path.split(".")[1]] for path in grid}
    combos = [dict(zip(grid, values, strict=True)) for values in itertools.product(*grid.values())]
    combos.sort(key=lambda c: c != today)
    out = []
    for combo in combos:
        spec = preset("lab").model_dump(mode="json")
        for path, v in combo.items():
            _setting(spec, path, v)
        label = _variant_label(combo)
        spec["label"] = label
        out.append((label, parse_config(spec)))
    return out


def long_sessions(n: int, min_tokens: int = LONG_MIN_TOKENS) -> list[tuple[str, Any]]:
    """``n`` generated sessions, each at least ``min_tokens`` tokens over its messages, with planted content
    dependencies (edits of lines read earlier, quotes of earlier output, edits of files it wrote)."""
    out = []
    for k in range(n):
        requests = 220
        while True:
            t = generate(seed=1000 + k, requests=requests, content_dependencies=40, typical_output_chars=4000)
            total = sum(estimate_tokens(m) for m in t.messages)
            if total >= min_tokens or requests >= 2000:
                break
            requests = int(requests * min_tokens / max(total, 1) * 1.05) + 1
        out.append((f"generated long #{k + 1} ({total // 1000}k tokens)", t))
    return out


def target_misses(values: Mapping[int, Mapping[str, Any]], seeds: Mapping[int, Mapping[str, Mapping[str, Any]]]) -> list[str]:
    """What keeps a config's figures (window -> summarise dict) from issue 28's target against the seeds
    (window -> seed -> summarise dict): at every window at least as high as each seed on both recalls,
    0 failures, 0 invalid, cost within ``COST_MARGIN`` of the cheapest seed. Empty when it is met."""
    misses = []
    for w, v in values.items():
        k = f"{w // 1000}k"
        if v["failures"] or v["invalid"]:
            misses.append(f"{k}: {v['failures']} failures, {v['invalid']} invalid")
        for metric, name in (("content_recall", "content"), ("needed_later_recall", "names")):
            best = max(((s[metric], p) for p, s in seeds[w].items() if s[metric] is not None), default=None)
            if best is not None and (v[metric] is None or v[metric] < best[0] - 1e-9):
                misses.append(f"{k}: {name} {_pct(v[metric])} < {best[1]} {_pct(best[0])}")
        cheapest = min((s["cost"], p) for p, s in seeds[w].items())
        if v["cost"] > cheapest[0] * (1 + COST_MARGIN) + 1e-12:
            misses.append(f"{k}: cost ${v['cost']:.4f} > {cheapest[1]} ${cheapest[0]:.4f} + {COST_MARGIN:.0%}")
    return misses


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1%}"


def _cells(a: dict[str, Any], b: dict[str, Any] | None, mark: str = "=") -> str:
    """In-sample and held-out side by side; without a held-out figure, ``mark`` stands in its place."""
    def pair(metric: str, fmt: Any, width: int) -> str:
        left = fmt(a[metric])
        right = mark if b is None else fmt(b[metric])
        return f"{left:>{width}} {right:>{width}}"

    money = lambda x: f"${x:.3f}"  # noqa: E731 - a one-line formatter beside the others
    return "  ".join([pair("content_recall", _pct, 6), pair("content_recall_all", _pct, 6), pair("needed_later_recall", _pct, 6),
                      pair("cost", money, 7), pair("failures", str, 3), pair("invalid", str, 3)])


def _tables(labelled: Sequence[tuple[str, Any]], cells: Sequence[Sequence[Any]], names: Sequence[str],
            windows: Sequence[int]) -> tuple[dict[int, dict[str, dict[str, Row]]], list[str]]:
    """window -> config -> session -> row, from ``run_grid``'s cells (labels ``config@window``), and the errors."""
    tables: dict[int, dict[str, dict[str, Row]]] = {w: {} for w in windows}
    errors = []
    for (label, _), row in zip(labelled, cells, strict=True):
        base, w = label.rsplit("@", 1)
        for j, cell in enumerate(row):
            if cell.row is None:
                # A replay that raised counts as a failure of that config on that session, not as a hole in the table.
                errors.append(f"{label} on {names[j]}: {cell.error}")
                tables[int(w)].setdefault(base, {})[names[j]] = {"content_recall": None, "needed_later_recall": None, "cost": 0.0,
                                                                  "failures": 1, "invalid_requests": 0}
            else:
                tables[int(w)].setdefault(base, {})[names[j]] = cell.row
    return tables, errors


def bench_heldout(files: list[Path], windows: Sequence[int] = HELDOUT_WINDOWS, grid: Mapping[str, Sequence[Any]] = GRID,
                  long: int = LONG_SESSIONS, processes: int = 2, peers: Sequence[str] = PEERS) -> tuple[list[str], dict]:
    transcripts, listed = sessions_of(files)
    names = [f"corpus #{k + 1}" for k in range(len(transcripts))]
    generated = long_sessions(long) if long else []
    names += [n for n, _ in generated]
    transcripts += [t for _, t in generated]
    variants = lab_variants(grid)
    candidates = [label for label, _ in variants]
    fixed = [(p, preset(p)) for p in peers]
    labelled = []
    for w in windows:
        for label, cfg in [*variants, *fixed]:
            labelled.append((f"{label}@{w}", with_value(with_value(cfg, "counter", COUNTER), "window", w)))
    start = time.perf_counter()
    cells = run_grid(transcripts, [c for _, c in labelled], names=names, labels=[lab for lab, _ in labelled],
                     processes=processes, settings={"recorded_compactions": "undo"})
    seconds = time.perf_counter() - start
    tables, errors = _tables(labelled, cells, names, windows)
    lines = [f"{len(names)} sessions: {len(transcripts) - len(generated)} of {listed} corpus sessions (in {len(files)} files) and "
             f"{len(generated)} generated long ones; recorded compactions undone; counted with {COUNTER}; "
             f"{len(variants)} lab variants ({', '.join(f'{_SHORT.get(p, p)} {list(v)}' for p, v in grid.items())}) and "
             f"{len(fixed)} presets at {', '.join(f'{w // 1000}k' for w in windows)}: {len(labelled) * len(names)} replays, each once, "
             f"{seconds:.0f} s wall with {processes} process(es)"]
    lines += [f"  replay error: {e}" for e in errors]
    lines.append("Each pair: in-sample, held-out. content: mean over sessions with >= 30 needed items; all: over any; names: needed_later_recall. "
                 "'=': a fixed preset, chosen on no session here, so held-out is in-sample; '-': the shipped lab preset (the grid's "
                 "first variant) was picked on these very sessions: its held-out figure is the 'one config (LOSO)' row.")
    lines.append(f"{'preset':30} {'window':>6}  {'content':>13}  {'content(all)':>13}  {'names':>13}  {'cost/session':>15}  {'fail':>7}  {'invalid':>7}")
    # One config for every window (a preset is one config): a session's rows at every window are held out together.
    joint = {c: {f"{s}@{w}": tables[w][c][s] for w in windows for s in names} for c in candidates}
    keys = [f"{s}@{w}" for w in windows for s in names]
    group = {k: k.rsplit("@", 1)[0] for k in keys}
    picked = {by: (choose(joint, candidates, keys, by=by), loso(joint, candidates, keys, group, by=by)) for by in ("content", "cost")}
    data: dict[str, Any] = {"sessions": names, "variants": candidates, "replay_seconds": round(seconds, 1), "windows": {},
                            "one_config": {by: {"in_sample": a, "by_session": b} for by, (a, b) in picked.items()}}
    held: dict[str, dict[int, dict[str, Any]]] = {}
    seeds: dict[int, dict[str, dict[str, Any]]] = {}
    for w in windows:
        table = tables[w]
        rows: dict[str, Any] = {}

        def show(name: str, inside: dict[str, Any], out: dict[str, Any] | None, mark: str = "=", w: int = w,
                 rows: dict[str, Any] = rows) -> None:
            lines.append(f"{name:30} {w // 1000:>5}k  {_cells(inside, out, mark)}")
            # A fixed preset's held-out figure is its in-sample one; the shipped lab preset has none of its own.
            rows[name] = {"in_sample": inside, "heldout": (inside if mark == "=" else None) if out is None else out}

        per_window = choose(table, candidates, names)
        picks = loso(table, candidates, names)
        show("lab, per window (LOSO)", summarise([table[per_window][s] for s in names]), summarise([table[picks[s]][s] for s in names]))
        for by, name in (("content", "lab, one config (LOSO)"), ("cost", "lab-lean, one config (LOSO)")):
            inside_pick, by_session = picked[by]
            out = summarise([table[by_session[s]][s] for s in names])
            held.setdefault(name, {})[w] = out
            show(name, summarise([table[inside_pick][s] for s in names]), out)
        for label in [candidates[0], *[p for p, _ in fixed]]:
            stats = summarise([table[label][s] for s in names])
            show("lab preset (as shipped)", stats, None, "-") if label == candidates[0] else show(label, stats, None)
            if label in SEEDS:
                seeds.setdefault(w, {})[label] = stats
        for label in candidates:
            held.setdefault(label, {})[w] = summarise([table[label][s] for s in names])
        data["windows"][str(w)] = {"rows": rows, "in_sample_pick": per_window, "picks": picks}
        lines.append(f"  {w // 1000}k per-window picks: in-sample {per_window}; held-out "
                     + ", ".join(f"{c} x{n}" for c, n in Counter(picks.values()).most_common()))
    for by, name in (("content", "lab"), ("cost", "lab-lean")):
        inside_pick, by_session = picked[by]
        lines.append(f"  {name}, one config: in-sample {inside_pick}; held-out "
                     + ", ".join(f"{c} x{n}" for c, n in Counter(by_session.values()).most_common()))
    # The verdict: one variant picked on (nearly) every fold is the held-out choice; then issue 28's target.
    inside_pick, by_session = picked["content"]
    top, top_n = Counter(by_session.values()).most_common(1)[0]
    stable = top_n >= STABLE * len(by_session)
    lines.append(f"verdict: one config for every window, chosen without the held-out session, is {top} on {top_n} of "
                 f"{len(by_session)} folds" + (": that is the held-out choice." if stable else ": no single variant on nearly every fold."))
    configs = dict(variants)
    for path, tried in grid.items():
        section, key = path.split(".")
        value = getattr(getattr(configs[top], section), key)
        if len(tried) >= 3 and value in (min(tried), max(tried)):
            # A pick at the end of a range says the grid, not the data, stopped it: a wider grid may pick further.
            lines.append(f"  note: its {path} = {value} is at the edge of the values tried {list(tried)}")
    missing = {name: target_misses(held[name], seeds) for name in ("lab, one config (LOSO)", "lab-lean, one config (LOSO)")}
    for label in candidates:
        missing[label] = target_misses(held[label], seeds)
    winners = [c for c, m in missing.items() if not m]
    target = ("issue 28's target (>= minicode, mewcode and codex on content and names recall at every window, 0 failures, "
              "0 invalid, cost <= the cheapest of the three + 10%)")
    if winners:
        lines.append(f"verdict: {target} is met by: {', '.join(winners)} (a fixed variant's figure is in-sample: picked after seeing these sessions)")
    else:
        lines.append(f"verdict: NO single config meets {target}: not the held-out picks, and no variant of the grid even in-sample.")
    for name in ("lab, one config (LOSO)", "lab-lean, one config (LOSO)", candidates[0]):
        lines.append(f"  {name} misses: {'; '.join(missing[name]) or 'nothing'}")
    fewest = min(candidates, key=lambda c: (len(missing[c]), candidates.index(c)))
    lines.append(f"  fewest misses in the grid: {fewest}: {'; '.join(missing[fewest]) or 'nothing'}")
    data["stable_choice"] = top if stable else None
    data["target_met_by"] = winners
    data["misses"] = missing
    return lines, data


def _section(quick: bool) -> tuple[list[str], dict]:
    if quick:
        lines, data = bench_heldout(corpus_files(), HELDOUT_WINDOWS[:1], QUICK_GRID, long=0)
        # Said, so a quick run's verdict is not read as the preset's: the shipped presets come from the full run.
        return [f"quick: {math.prod(len(v) for v in QUICK_GRID.values())} variants, 32k only, corpus sessions only; its verdict is not the one the presets were chosen by", *lines], data
    return bench_heldout(corpus_files())


register_section("heldout", _section)
