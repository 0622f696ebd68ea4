"""``python -m lab replay`` and ``python -m lab compare``.

    replay PATH [--session ID] (--config F | --preset P) [--settings S] [--window N] [--spill-dir DIR]
           [--summarizer rules|anthropic|openai [--base-url URL] [--model M]]
           --report REPORT.json [--dump-requests REQUESTS.jsonl] [--to anthropic|openai]
    compare PATH_OR_DIR [--session ID] (--preset P | --config F)... [--settings S] [--window N] [--processes N | --ray auto|ADDRESS] --out TABLE.csv|.parquet|.json

REPORT.json holds the config, the replay settings, every row and the totals. REQUESTS.jsonl has
one line per request: the exact context that would be sent, as a provider
request body (``system`` and ``messages``). An LLM summarizer takes its key
from ANTHROPIC_API_KEY / OPENAI_API_KEY only, and is wrapped in MewCode's PTL
retry. Bad input raises a ``LabError``; ``lab.cli`` prints it as one line and
exits 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any
from collections.abc import Callable

from .atomic import atomic_writer
from .cli_probe import add_probe_options, probe_spec
from .cli_settings import HIDDEN_HELP, add_settings_option, hidden_tokens, read_config, run_inputs, with_hidden
from .errors import ConfigError, LabError

__all__ = ["add_replay_commands", "write_requests"]


def write_requests(report: Any, path: str | os.PathLike[str], to: str = "anthropic") -> int:
    """One JSON line per request: the context sent, as an Anthropic or OpenAI request body."""
    from .formats.export import to_anthropic, to_openai

    export = to_anthropic if to == "anthropic" else to_openai
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with atomic_writer(target) as fh:
            for k, row in enumerate(report.rows):
                line = {"index": row.index, "message_index": row.message_index, "failed": row.failed, "request": export(report.context_at(k))}
                fh.write(json.dumps(line, ensure_ascii=False) + "\n")
    except OSError as e:
        raise LabError(f"cannot write {target}: {e.strerror or e}") from None
    return len(report.rows)


def _money(x: float) -> str:
    return f"${x:,.4f}"


def _cmd_replay(args: argparse.Namespace) -> int:
    from .core.store import FolderStore, MemoryStore
    from .cli import warn_misread
    from .formats import load
    from .replayer import replay

    from .core.diagnostics import config_warnings
    from .core.stages.spill import cleanup_spills
    from .core.summarizers.factory import build_summarizer
    from .replayer import resolve_config
    from .replayer.alerts import report_alerts

    cfg, settings = run_inputs(args)
    if args.summarizer:
        cfg.summary.summarizer = args.summarizer
    # API keys come from the environment only; the factory reads them there.
    summarizer = build_summarizer(cfg, base_url=args.base_url, model=args.model)
    transcript = load(args.path, session=args.session)
    warn_misread(transcript)
    store = FolderStore(args.spill_dir) if args.spill_dir else MemoryStore()
    # MewCode removes spilled sessions after 30 days; a spill folder reused across runs ages the same way.
    cleanup_spills(store, cfg.spill)
    # Settings that cannot work at this window are said up front; the replay still runs, it is an experiment.
    for warning in config_warnings(resolve_config(cfg, args.window)):
        print(f"warning: {warning}", file=sys.stderr)
    report = replay(transcript, cfg, settings=settings, window=args.window, store=store, summarizer=summarizer)
    report.write(args.report)
    # What went wrong in the replay itself, each with the setting to change: as loud as the config warnings.
    for alert in report_alerts(report):
        print(f"warning: {alert.text}", file=sys.stderr)
    if args.dump_requests:
        write_requests(report, args.dump_requests, args.to)
    compactions = ", ".join(f"{k} {v}" for k, v in report.compactions_by_strategy.items()) or "none"
    score = "n/a" if report.retention_score is None else f"{report.retention_score:.3f}"
    print(f"replayed {args.path} under {report.label} (window {report.window:,}, counter {report.counter}, clock {report.clock})")
    print(f"requests: {report.requests}; peak sent: {report.peak_sent:,} tokens (raw history {report.peak_raw:,})")
    print(f"compactions: {compactions}; summary calls: {report.summary_calls}; over watermark: {report.requests_over_watermark}")
    print(f"invalid requests: {report.invalid_requests}; overflows: {report.overflows} (recovered {report.recoveries}, failed {report.failures}); "
          f"breaker open over watermark: {report.breaker_open_over_watermark}")
    print(f"cost: {_money(report.total_cost)} with compaction, {_money(report.total_cost_uncompacted)} without")
    print(f"cache-hit ratio: {report.cache_hit_ratio:.1%} with compaction, {report.cache_hit_ratio_uncompacted:.1%} without")
    print(f"retention score: {score}")
    for note in report.notes:
        print(f"note: {note}")
    print(f"report -> {args.report}" + (f"; requests -> {args.dump_requests}" if args.dump_requests else ""))
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from .replayer import compare_folder
    from .replayer.settings import load_settings, resolve_settings

    configs: list[Any] = [p for p in args.preset or []]
    carried: list[Any] = []
    for path in args.config or []:
        cfg, old = read_config(path)
        if old is not None:
            carried.append(old)
        # A config file that never named itself is labelled by its file name.
        configs.append((cfg.label if cfg.label != "custom" else Path(path).stem, cfg))
    if not configs:
        raise ConfigError("give at least one --preset or --config")
    # One settings for every row, so the rows differ only in how they compact.
    settings: Any = None
    if args.settings:
        settings = load_settings(args.settings)
    elif carried and any(c != carried[0] for c in carried):
        raise ConfigError("the --config files carry different replay settings (their old 'replay' sections); give one with --settings")
    else:
        settings = carried[0] if carried else None
    out = Path(args.out)
    if out.suffix.lower() not in (".csv", ".parquet", ".json"):
        raise ConfigError(f"--out must end in .csv, .parquet or .json, got {out.name!r}")
    table = compare_folder(args.path, configs, processes=args.processes or 2, window=args.window,
                           settings=with_hidden(resolve_settings(settings, args.recorded_compactions), args.hidden_tokens),
                           ray=args.ray, probe=probe_spec(args), session=args.session)
    table.write(out)
    for note in table.notes:
        print(f"note: {note}", file=sys.stderr)
    print(f"compared {len({r['transcript'] for r in table.rows})} transcript(s) x {len(configs)} config(s): {len(table.rows)} row(s) -> {out}")
    for r in table.rows:
        score = "n/a" if r["retention_score"] is None else f"{r['retention_score']:.3f}"
        print(f"  {r['transcript']} | {r['config']}: peak {r['peak_sent']:,}, cost {_money(r['cost'])} (vs {_money(r['cost_uncompacted'])}), "
              f"hit {r['cache_hit_ratio']:.0%}, retention {score}, invalid {r['invalid_requests']}")
    # A file no importer reads fails the same way under every config: one line names them all.
    grouped: dict[tuple[str, str], list[str]] = {}
    for e in table.errors:
        grouped.setdefault((e["transcript"], e["error"]), []).append(e["config"])
    # In the order the configs were given, whichever process finished first.
    order = {label: k for k, label in enumerate(c if isinstance(c, str) else c[0] for c in configs)}
    for (name, error), labels in grouped.items():
        print(f"skipped: {name} [{', '.join(sorted(labels, key=lambda x: (order.get(x, len(order)), x)))}]: {error}")
    return 0


def whole_number(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``minimum`` (argparse turns the error into exit 2 with one line)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    return parse


_positive = whole_number(1)


_RECORDED_HELP = (
    "Compactions the original agent recorded: undo (replay the raw history as if it never compacted) "
    "or keep (honour them); default: the replay settings' recorded_compactions, undo."
)


def add_replay_commands(add: Callable[..., Any]) -> None:
    """Register ``replay`` and ``compare`` through the ``add(name, fn, help)`` callback of ``lab.cli``."""
    from .cli import add_session_option
    sp = add("replay", _cmd_replay, "Replay a transcript under a config: per-request timeline, cache, cost and retention.")
    sp.add_argument("path", help="A transcript in any supported format.")
    add_session_option(sp)
    group = sp.add_mutually_exclusive_group(required=True)
    group.add_argument("--config", help="A config file (JSON, YAML or TOML).")
    group.add_argument("--preset", help="A preset name (see `python -m lab presets`).")
    add_settings_option(sp)
    sp.add_argument("--window", type=_positive, help="Override the config's context window, in tokens.")
    sp.add_argument("--spill-dir", help="Write spilled tool results under this folder (default: in memory).")
    sp.add_argument("--summarizer", choices=["rules", "anthropic", "openai"], help="Who writes summaries (default: the config's choice).")
    sp.add_argument("--base-url", help="API base URL for the LLM summarizer (an OpenAI-compatible server needs /v1).")
    sp.add_argument("--model", help="Model for the LLM summarizer.")
    sp.add_argument("--recorded-compactions", choices=["undo", "keep"], help=_RECORDED_HELP)
    sp.add_argument("--hidden-tokens", type=hidden_tokens, help=HIDDEN_HELP)
    sp.add_argument("--report", required=True, help="Where to write REPORT.json (config, settings, rows, totals).")
    sp.add_argument("--dump-requests", help="Also write REQUESTS.jsonl: the context of every request as a provider body.")
    sp.add_argument("--to", choices=["anthropic", "openai"], default="anthropic", help="Provider shape of --dump-requests.")

    sp = add("compare", _cmd_compare, "Replay a transcript or a folder under several configs and write one table.")
    sp.add_argument("path", help="A transcript file or a folder of them.")
    add_session_option(sp)
    sp.add_argument("--preset", action="append", help="A preset to compare (repeatable).")
    sp.add_argument("--config", action="append", help="A config file to compare (repeatable); labelled by its file name.")
    add_settings_option(sp)
    sp.add_argument("--window", type=_positive, help="Override every config's context window.")
    where = sp.add_mutually_exclusive_group()
    where.add_argument("--processes", type=_positive, help="Worker processes (1 runs in this process; default 2).")
    where.add_argument("--ray", help="Run each transcript x config as a Ray task: auto (a cluster this machine knows, else a local runtime) or a cluster ADDRESS.")
    sp.add_argument("--recorded-compactions", choices=["undo", "keep"], help=_RECORDED_HELP)
    sp.add_argument("--hidden-tokens", type=hidden_tokens, help=HIDDEN_HELP)
    sp.add_argument("--out", required=True, help="TABLE.csv, .parquet or .json.")
    add_probe_options(sp)
