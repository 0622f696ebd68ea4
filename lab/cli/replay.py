"""``python -m lab replay`` and ``python -m lab compare``.

    replay PATH [--session ID] (--config F | --preset P) [--settings S] [--window N|proposed] [--spill-dir DIR]
           [--summarizer rules|anthropic|openai [--base-url URL] [--model M]]
           --report REPORT.json [--dump-requests REQUESTS.jsonl] [--to anthropic|openai|responses] [--no-redact]
    compare PATH_OR_DIR [--session ID] (--preset P | --config F)... [--settings S] [--window N] [--processes N | --ray auto|ADDRESS] [--strict] --out TABLE.csv|.parquet|.json [--ranking RANKING.csv]

Both print the import's warnings once on stderr (``warning: FILE: ...``). ``compare`` accounts for every
file (compared, unreadable with its reason, or left out as no transcript; ``--strict`` makes an unreadable
one an error), shows overflows and failures on each line, and, when every config broke one constraint,
says which, where, and what would fix it (``lab.replayer.explain``).

REPORT.json holds the config, the replay settings, every row and the totals. REQUESTS.jsonl has
one line per request: the exact context that would be sent, as a provider
request body (``system`` and ``messages``). Both carry one run id: the
report's ``"run"`` names the dump, its line count and sha256, and every dump
line holds ``"run"``, so a report and a dump left by different (or killed)
runs never pass for a pair. Secrets in the transcript are redacted in both and
in spill files (``--no-redact`` keeps them); the count is a ``note:`` on
stderr. An LLM summarizer takes its key
from ANTHROPIC_API_KEY / OPENAI_API_KEY only, and is wrapped in MewCode's PTL
retry. Bad input raises a ``LabError``; ``lab.cli.main`` prints it as one line and
exits 2.

Each verb imports the replay engine and the format readers when it runs, not with the CLI: they are
what ``--help`` and the other verbs never need.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
from pathlib import Path
from typing import Any
from collections.abc import Callable

from ..atomic import atomic_writer, file_digest, redaction
from ..errors import ConfigError, LabError
from .common import STRICT_HELP, add_no_redact_option, add_probe_options, add_session_option, print_batch_warnings, print_import_notes, probe_spec, whole_number
from .settings import HIDDEN_HELP, add_settings_option, hidden_tokens, read_config, run_inputs, with_hidden
from ..core.diagnostics import config_warnings
from ..core.stages.spill import cleanup_spills
from ..core.store import FolderStore, MemoryStore
from ..core.summarizers.factory import build_summarizer

__all__ = ["add_replay_commands", "write_requests"]


def write_requests(report: Any, path: str | os.PathLike[str], to: str = "anthropic", run: str | None = None) -> int:
    """One JSON line per request: the context sent, as an Anthropic or OpenAI request body.

    With ``run``, every line carries it as ``"run"``: the id the report of the same run holds.
    """
    return _dump_requests(report, path, to, run)[0]


def _dump_requests(report: Any, path: str | os.PathLike[str], to: str, run: str | None) -> tuple[int, str]:
    """``write_requests``, also returning the sha256 of the file written."""
    # The format writers load only when a dump is asked for.
    from ..formats.export import to_anthropic, to_openai, to_responses

    export = {"anthropic": to_anthropic, "openai": to_openai, "responses": to_responses}[to]
    target = Path(path)
    stamp = {} if run is None else {"run": run}
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with atomic_writer(target) as fh:
            for k, row in enumerate(report.rows):
                line = {**stamp, "index": row.index, "message_index": row.message_index, "failed": row.failed, "request": export(report.context_at(k))}
                fh.write(json.dumps(line, ensure_ascii=False) + "\n")
            digest = file_digest(fh)
    except OSError as e:
        raise LabError(f"cannot write {target}: {e.strerror or e}") from None
    return len(report.rows), digest


def _run_stamp(run: str, dump: str | None, dumped: tuple[int, str] | None) -> dict[str, Any]:
    """The report's ``"run"``: its id, and the request dump of the same run (name, lines, sha256), if any.

    A killed run can leave an old dump beside a new report; this says whether the two belong together.
    """
    stamp: dict[str, Any] = {"id": run, "requests": dump}
    if dumped is not None:
        stamp.update(requests_count=dumped[0], requests_sha256=dumped[1])
    return stamp


def _money(x: float) -> str:
    return f"${x:,.4f}"


def _share(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def _cmd_replay(args: argparse.Namespace) -> int:
    # The verb's engine loads when it runs, not with the CLI (``--help`` and the other verbs never need it).
    from ..formats import load
    from ..replayer import replay, resolve_config
    from ..replayer.alerts import report_alerts

    cfg, settings = run_inputs(args)
    if args.summarizer:
        # A config is frozen: a new one with this summarizer (argparse's choices are the field's own values).
        cfg = cfg.model_copy(update={"summary": cfg.summary.model_copy(update={"summarizer": args.summarizer})})
    # API keys come from the environment only; the factory reads them there.
    summarizer = build_summarizer(cfg, base_url=args.base_url, model=args.model)
    transcript = load(args.path, session=args.session)
    # What the import warned about (a cut-off last line, skipped records, a simulated clock...), once, on stderr.
    print_import_notes(transcript, args.path, replayed=True, use_timestamps=settings.use_timestamps)
    window = args.window
    if window == PROPOSED:
        # The app's rule, so the two give one replay: the window at which this config summarizes the session,
        # measured with the hidden part counted, and the replays then count it too (lab.replayer.window).
        from ..replayer.window import propose_window, settings_for

        proposal = propose_window(transcript, config=cfg, settings=settings)
        print(f"window: {proposal.reason}")
        window, settings = proposal.window, settings_for(proposal, settings)
    store = FolderStore(args.spill_dir, redact=not args.no_redact) if args.spill_dir else MemoryStore()
    # MewCode removes spilled sessions after 30 days; a spill folder reused across runs ages the same way.
    cleanup_spills(store, cfg.spill)
    # Settings that cannot work at this window are said up front; the replay still runs, it is an experiment.
    for warning in config_warnings(resolve_config(cfg, window)):
        print(f"warning: {warning}", file=sys.stderr)
    report = replay(transcript, cfg, settings=settings, window=window, store=store, summarizer=summarizer)
    run = secrets.token_hex(8)
    with redaction(not args.no_redact) as tally:
        # The dump first: the report then names it and its hash, and a report is never beside a dump of another run unawares.
        dumped = _dump_requests(report, args.dump_requests, args.to, run) if args.dump_requests else None
        if args.report:
            report.write(args.report, run=_run_stamp(run, args.dump_requests, dumped))
    if isinstance(store, FolderStore):
        tally.merge(store.redacted)
    # What went wrong in the replay itself, each with the setting to change: as loud as the config warnings.
    for alert in report_alerts(report):
        print(f"warning: {alert.text}", file=sys.stderr)
    if tally.note():
        print(f"note: {tally.note()}", file=sys.stderr)
    _print_summary(args.path, report)
    for note in report.notes:
        print(f"note: {note}")
    written = [f"report -> {args.report}"] if args.report else []
    written += [f"requests -> {args.dump_requests}"] if args.dump_requests else []
    if written:
        print("; ".join(written))
    return 0


def _print_summary(path: str, report: Any) -> None:
    """The replay's summary lines, in the words the app uses (``lab.replayer.report``'s vocabulary and explanations)."""
    # The replay engine's report helpers load only once a replay has run.
    from ..replayer.prices import cost_text, pricing_rule
    from ..replayer.report import describe_compactions, describe_invalid, raw_peak_note

    score = "n/a" if report.retention_score is None else f"{report.retention_score:.3f}"
    print(f"replayed {path} under {report.label} (window {report.window:,}, counter {report.counter}, clock {report.clock})")
    print(f"requests: {report.requests}; peak sent: {report.peak_sent:,} tokens ({raw_peak_note(report)})")
    # Summaries apart from spills and clearing: "compactions 4" that were all spills read as four summaries.
    print(f"compactions: {describe_compactions(report.compactions_by_kind)}; summary calls: {report.summary_calls}; "
          f"over watermark: {report.requests_over_watermark}")
    print(f"invalid requests: {report.invalid_requests}; overflows: {report.overflows} (recovered {report.recoveries}, failed {report.failures}); "
          f"breaker open over watermark: {report.breaker_open_over_watermark}")
    for line in describe_invalid(report):
        print(f"  invalid: {line}")
    print(f"cost: {cost_text(report.total_cost, report.settings)} with compaction, {_money(report.total_cost_uncompacted)} without; "
          f"priced at {pricing_rule(report.pricing_source, report.meta.get('model'))}")
    print(f"cache-hit ratio: {report.cache_hit_ratio:.1%} with compaction, {report.cache_hit_ratio_uncompacted:.1%} without")
    print(f"retention score: {score}")
    print(f"content recall {_share(report.content_recall)} ({report.content_needed} needed; names recall {_share(report.needed_later_recall)}); "
          f"re-read {report.reread_tokens:,} tokens")


def _cmd_compare(args: argparse.Namespace) -> int:
    # The verb's engine loads when it runs, not with the CLI (``--help`` and the other verbs never need it).
    from ..evaluation import compare_folder
    from ..replayer.settings import load_settings, resolve_settings

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
    if args.ranking is not None and Path(args.ranking).suffix.lower() not in (".csv", ".parquet", ".json"):
        raise ConfigError(f"--ranking must end in .csv, .parquet or .json, got {Path(args.ranking).name!r}")
    if args.session is not None and len(args.path) > 1:
        raise ConfigError("--session picks one session of one file or folder: give a single path with it")
    source: Any = args.path[0] if len(args.path) == 1 else args.path
    table = compare_folder(source, configs, processes=args.processes or 2, window=args.window,
                           settings=with_hidden(resolve_settings(settings, args.recorded_compactions), args.hidden_tokens),
                           ray=args.ray, probe=probe_spec(args), session=args.session, strict=args.strict)
    table.write(out)
    for note in table.notes:
        print(f"note: {note}", file=sys.stderr)
    print_batch_warnings(table.warnings)
    _config_warnings(configs, args.window)
    print(f"compared {len({r['transcript'] for r in table.rows})} transcript(s) x {len(configs)} config(s): {len(table.rows)} row(s) -> {out}")
    # Every transcript accounted for: compared, unreadable (and why), or left out as no transcript.
    if len(table.listed) > 1 or table.unreadable or table.left_out:
        print(table.summary())
    _print_rows(table.rows)
    stuck = table.blocked()
    if stuck is not None:
        print(f"infeasible: {stuck.text}")
    if args.ranking is not None and table.rows:
        # Per config and objective: the mean over sessions with a 95% bootstrap interval, wins / losses / ties.
        ranking = table.ranking()
        ranking.write(args.ranking)
        print(ranking.summary())
        print(f"ranking -> {args.ranking}")
    # A file no importer reads fails the same way under every config: one line names them all.
    grouped: dict[tuple[str, str], list[str]] = {}
    for e in table.errors:
        grouped.setdefault((e["transcript"], e["error"]), []).append(e["config"])
    # In the order the configs were given, whichever process finished first.
    order = {label: k for k, label in enumerate(c if isinstance(c, str) else c[0] for c in configs)}
    for (name, error), labels in grouped.items():
        print(f"skipped: {name} [{', '.join(sorted(labels, key=lambda x: (order.get(x, len(order)), x)))}]: {error}")
    return 0


def _print_rows(rows: list[dict[str, Any]]) -> None:
    """One line per transcript x config, after a one-line legend of what its figures mean."""
    if rows:
        print("  legend: peak = most tokens sent in one request; cost = dollars with compaction (vs the same requests "
              "uncompacted); hit = prompt-cache hit ratio; invalid = requests a provider refuses")
    for r in rows:
        score = "n/a" if r["retention_score"] is None else f"{r['retention_score']:.3f}"
        # Overflows and failures too: what replay warns about must not hide behind "invalid 0" here.
        print(f"  {r['transcript']} | {r['config']}: peak {r['peak_sent']:,} tokens, cost {_money(r['cost'])} (vs {_money(r['cost_uncompacted'])}), "
              f"hit {r['cache_hit_ratio']:.0%}, retention {score}, invalid {r['invalid_requests']}, "
              f"overflows {r['overflows']} (failed {r['failures']})")
        # Where, and why, as replay says it: the first invalid request and the first failure of the row.
        for key, what in (("first_invalid", "first invalid"), ("first_failure", "first failure")):
            if r.get(key):
                print(f"    {what}: {r[key]}")


def _config_warnings(configs: list[Any], window: int | None) -> None:
    """What ``replay`` warns about a config that cannot work at its window, once per compared config."""
    # The verb's engine loads when it runs, not with the CLI (``--help`` and the other verbs never need it).
    from ..replayer import resolve_config

    for spec in configs:
        label, cfg = (spec, spec) if isinstance(spec, str) else spec
        for warning in config_warnings(resolve_config(cfg, window)):
            print(f"warning: {label}: {warning}", file=sys.stderr)


_positive = whole_number(1)
PROPOSED = "proposed"


def _window(text: str) -> int | str:
    """``--window``: tokens, or ``proposed`` (the window the app applies on load: lab.replayer.window)."""
    if text.strip().lower() == PROPOSED:
        return PROPOSED
    try:
        int(text)
    except ValueError:
        # The word is an answer too: a user who mistyped it should see it offered.
        raise argparse.ArgumentTypeError(f"expected a whole number or {PROPOSED!r}, got {text!r}") from None
    return _positive(text)


_RECORDED_HELP = (
    "Compactions the original agent recorded: undo (replay the raw history as if it never compacted) "
    "or keep (honour them); default: the replay settings' recorded_compactions, undo."
)


def add_replay_commands(add: Callable[..., Any]) -> None:
    """Register ``replay`` and ``compare`` through the ``add(name, fn, help)`` callback of ``lab.cli.main``."""
    sp = add("replay", _cmd_replay, "Replay a transcript under a config: per-request timeline, cache, cost and retention.")
    sp.add_argument("path", help="A transcript in any supported format.")
    add_session_option(sp)
    group = sp.add_mutually_exclusive_group(required=True)
    group.add_argument("--config", help="A config file (JSON, YAML or TOML).")
    group.add_argument("--preset", help="A preset name (see `python -m lab presets`).")
    add_settings_option(sp)
    sp.add_argument("--window", type=_window, help="Override the config's context window, in tokens; or `proposed`: the window at "
                    "which the config summarizes this session, the one the app applies on load (its hidden tokens counted too).")
    sp.add_argument("--spill-dir", help="Write spilled tool results under this folder (default: in memory).")
    sp.add_argument("--summarizer", choices=["rules", "anthropic", "openai"], help="Who writes summaries (default: the config's choice).")
    sp.add_argument("--base-url", help="API base URL for the LLM summarizer (an OpenAI-compatible server needs /v1).")
    sp.add_argument("--model", help="Model for the LLM summarizer.")
    sp.add_argument("--recorded-compactions", choices=["undo", "keep"], help=_RECORDED_HELP)
    sp.add_argument("--hidden-tokens", type=hidden_tokens, help=HIDDEN_HELP)
    sp.add_argument("--report", help="Where to write REPORT.json (config, settings, rows, totals); without it the summary is printed alone.")
    sp.add_argument("--dump-requests", help="Also write REQUESTS.jsonl: the context of every request as a provider body.")
    sp.add_argument("--to", choices=["anthropic", "openai", "responses"], default="anthropic",
                    help="Provider shape of --dump-requests: Anthropic Messages, OpenAI Chat Completions or OpenAI Responses.")
    add_no_redact_option(sp)

    sp = add("compare", _cmd_compare, "Replay a transcript or a folder under several configs and write one table.")
    sp.add_argument("path", nargs="+", help="Transcript files or folders of them (several: every transcript of each).")
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
    sp.add_argument("--ranking", metavar="FILE", help="Also rank the configs over the sessions (mean, 95%% bootstrap interval, "
                    "wins / losses / ties; lab.evaluation.ranking) into FILE.csv, .parquet or .json, and print it.")
    sp.add_argument("--strict", action="store_true", help=STRICT_HELP)
    add_probe_options(sp)
