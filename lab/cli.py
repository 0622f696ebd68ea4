"""``python -m lab``: the headless front end.

Every subcommand turns a ``LabError`` (or an unreadable path) into one line,
``error: ...``, and exit status 2, so scripts can tell bad input from a crash.
SIGTERM unwinds a command like Ctrl-C (temp files removed, worker processes
ended) and exits 143 with ``error: terminated``. What ``import`` and
``export`` write has known secrets redacted (``--no-redact`` keeps them), with
the count as a ``note:`` on stderr.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING, NoReturn, cast
from collections.abc import Callable, Iterator, Sequence

from .atomic import redaction
from .errors import LabError

if TYPE_CHECKING:  # the CLI imports the model lazily, per command
    from .core.messages import Message, Transcript
    from .core.redact import Tally

__all__ = ["main", "build_parser", "print_import_notes", "print_batch_warnings", "add_session_option", "add_no_redact_option"]

DEFAULT_COUNTERS = ("minicode", "chars/3.5", "o200k")
# A long session can drop thousands of blocks; the first few say what kind of thing was dropped.
MAX_NOTES = 20


class _Parser(argparse.ArgumentParser):
    # Set on the subcommands that read a transcript: their --help ends with every format's name and what it reads.
    lists_formats = False

    def error(self, message: str) -> NoReturn:
        # argparse would print the whole usage; users asked for one line.
        raise _UsageError(f"{self.prog}: {message}")

    def format_help(self) -> str:
        text = super().format_help()
        # Built only when help is asked for: listing the formats imports every reader, which a command does lazily.
        return text + "\n" + _format_list() if self.lists_formats else text


def _format_list() -> str:
    """The ``--format`` names, one per line with the first sentence of what each reads (detection's error points here)."""
    from .formats import FORMATS

    lines = ["formats (--format NAME; detected automatically when left out):"]
    width = max(len(name) for name in FORMATS)
    for name, fmt in sorted(FORMATS.items()):
        first = fmt.description.split(". ")[0].strip().rstrip(".")
        lines.append(f"  {name:<{width}}  {first}")
    return "\n".join(lines) + "\n"


class _UsageError(Exception):
    pass


# Every reader that picks one session of several says how to pick another with this (``--session ID``, ``--session N``).
_PICK_HINT = "--session"


def print_import_notes(t: Transcript, path: object = None, *, picked: bool = True, replayed: bool = False,
                       use_timestamps: bool = True, limit: int = MAX_NOTES) -> None:
    """The one place a verb prints what a transcript's import warned about: each warning once, on stderr, one line
    each, ``warning: FILE: ...`` (at most ``limit``, then a count of the rest). ``replayed``: the verb replays it, so
    a simulated clock (no timestamp in the file) is said too (``lab.replayer.explain.import_warnings``). Which session
    of several was read is a ``note:``, left out with ``picked=False``."""
    from .replayer.explain import import_warnings

    name = _cell(path if path is not None else (t.meta.source_path or t.meta.title or "transcript"))
    lines = import_warnings(t, replayed=replayed, use_timestamps=use_timestamps)
    if not picked:
        lines = [w for w in lines if _PICK_HINT not in w]
    _print_file_warnings(name, lines, limit)


def print_batch_warnings(warnings: dict[str, list[str]], limit: int = 5) -> None:
    """``print_import_notes`` for a batch run (compare, sweep): each transcript's import warnings, at most ``limit`` each."""
    for name, lines in warnings.items():
        _print_file_warnings(_cell(name), lines, limit)


def _print_file_warnings(name: str, lines: list[str], limit: int) -> None:
    for line in lines[:limit]:
        kind = "note" if _PICK_HINT in line else "warning"
        print(f"{kind}: {name}: {_cell(line)}", file=sys.stderr)
    if len(lines) > limit:
        print(f"warning: {name}: ... and {len(lines) - limit} more import warning(s) (`python -m lab import` lists them)", file=sys.stderr)


def _cmd_import(args: argparse.Namespace) -> int:
    from .core.stats import transcript_stats
    from .formats import dump, load

    t = load(args.path, format=args.format, session=args.session)
    print_import_notes(t, args.path)  # on stderr, once: the summary below lists only the notes that are not warnings
    with redaction(not args.no_redact) as tally:
        dump(t, to="lab", path=args.out)
    _print_redacted(tally)
    stats = transcript_stats(t, args.counter or DEFAULT_COUNTERS)
    print(f"imported {args.path} as {t.meta.source_format} -> {args.out}")
    print(f"messages: {stats.messages} ({', '.join(f'{k} {v}' for k, v in stats.by_role.items())})")
    tools = ", ".join(f"{k} {v}" for k, v in stats.tool_calls_by_tool.items()) or "none"
    print(f"tool calls: {stats.tool_calls} ({tools}); errors: {stats.tool_errors}")
    for name, n in stats.tokens.items():
        print(f"tokens [{name}]: {n:,} ({stats.tool_output_share[name]:.0%} tool output)")
    skipped = ", ".join(f"{k} {v}" for k, v in stats.skipped.items()) or "none"
    print(f"skipped records: {skipped}")
    for note in [n for n in stats.notes if n not in t.notes.warnings]:
        print(f"note: {note}")
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from .formats import dump, load
    from .formats.export import to_anthropic, to_openai
    from .formats.tool_results import close_pending, export_warnings, pending_note, pending_tool_calls

    t = load(args.path, format=args.format, session=args.session)
    print_import_notes(t, args.path)
    pending = pending_tool_calls(t.messages)
    # A request body is repaired by default (issue 27: every request the lab builds is one the API takes); the
    # lab's own lossless JSON keeps the transcript as it is unless the repair is asked for by name.
    close = args.close_pending if args.close_pending is not None else args.to != "lab"
    notes: list[str] = []
    with redaction(not args.no_redact) as tally:
        if args.to == "lab":
            if close and pending:
                t = t.model_copy(update={"messages": close_pending(t.messages)})
                notes.append(pending_note(pending, closed=True))
            dump(t, to="lab", path=args.out)
            count = len(t.messages)
        else:
            export = to_anthropic if args.to == "anthropic" else to_openai
            body = export(t, notes=notes, close_pending=close)
            _write_body(body, args.out)
            # What the request holds, after boundaries, empty messages and merges, not what was read.
            count = len(body["messages"])
    _print_redacted(tally)
    if pending and not close and args.to != "lab":
        # The request as written will be refused: said on stderr, where a script looks for trouble.
        print(f"warning: {pending_note(pending, closed=False, option='an export without --keep-pending')}", file=sys.stderr)
    print(f"exported {count} messages to {args.to} shape -> {args.out}{_count_why(t.messages, count, notes, args.to)}")
    shown = [n for n in notes if n != pending_note(pending, closed=False)]
    # What the export had to change for the API to accept it (orphan or moved results, rewritten ids): on stderr too.
    forced = export_warnings(shown)
    for warning in forced:
        print(f"warning: {warning}", file=sys.stderr)
    shown = [n for n in shown if n not in forced]
    for note in shown[:MAX_NOTES]:
        print(f"note: {note}")
    if len(shown) > MAX_NOTES:
        print(f"note: ... and {len(shown) - MAX_NOTES} more")
    return 0


def _count_why(messages: Sequence[Message], count: int, notes: Sequence[str], shape: str) -> str:
    """Why the export's message count differs from what ``import`` counted (issue 31: 99 exported of 103 read, unsaid)."""
    read = len(messages)
    if count == read:
        return ""
    parts: list[str] = []
    system = 0
    if shape == "anthropic":
        while system < read and messages[system].role == "system":
            system += 1
        if system:
            parts.append(f"{system} system message(s) moved to the body's system field")
    dropped = sum(1 for n in notes if n.endswith("message dropped"))
    if dropped:
        parts.append(f"{dropped} with nothing left to send dropped (see the notes)")
    rest = read - system - dropped - count
    if rest > 0:
        parts.append(f"net {rest} fewer as consecutive messages of one role were merged (the API wants one message per turn)")
    elif rest < 0:
        parts.append(f"net {-rest} more as tool results are messages of their own in this shape")
    return f" (of the {read} imported: " + "; ".join(parts) + ")"


def _print_redacted(tally: Tally) -> None:
    """The count of secrets a write replaced, on stderr: the file differs from the transcript there."""
    note = tally.note()
    if note:
        print(f"note: {note}", file=sys.stderr)


def add_no_redact_option(sp: argparse.ArgumentParser) -> None:
    """``--no-redact``, shared by every command that writes transcript text."""
    sp.add_argument(
        "--no-redact",
        action="store_true",
        help="Write secrets found in the transcript (API keys, tokens, private keys) as they are; by default each becomes [REDACTED:<kind>].",
    )


def _write_body(body: dict, path: str) -> None:
    from .atomic import write_text_atomic

    try:
        write_text_atomic(path, json.dumps(body, ensure_ascii=False, indent=1))
    except OSError as e:
        raise LabError(f"cannot write {path}: {e.strerror or e}") from None


def _cmd_tokens(args: argparse.Namespace) -> int:
    from .core.stats import transcript_stats
    from .formats import load

    t = load(args.path, format=args.format, session=args.session)
    print_import_notes(t, args.path)
    stats = transcript_stats(t, args.counter or DEFAULT_COUNTERS)
    if args.json:
        print(json.dumps({"path": args.path, "tokens": stats.tokens, "tool_output_share": stats.tool_output_share}, indent=2))
    else:
        for name, n in stats.tokens.items():
            print(f"{name:>12}: {n:>10,}  ({stats.tool_output_share[name]:.0%} tool output)")
    return 0


def _cell(value: object) -> str:
    """A table cell: what a file holds, with control characters escaped so they cannot drive the terminal."""
    text = "" if value is None else str(value)
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _cmd_sessions(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from .formats import sessions

    listed = sessions(args.path, format=args.format)
    if args.json:
        print(json.dumps({"path": args.path, "sessions": [asdict(s) for s in listed]}, ensure_ascii=False, indent=2))
        return 0
    rows = [("id", "updated", "messages", "kind", "title")]
    rows += [(_cell(s.id), _cell(s.updated) or "-", str(s.messages), _cell(s.kind) or "-", _cell(s.title) or "-") for s in listed]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        print("  ".join(c.ljust(w) if i != 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r[:4], widths, strict=True))) + "  " + r[4])
    fmt = ", ".join(sorted({s.format for s in listed})) or args.format or "?"
    print(f"{len(listed)} session(s) ({fmt}), newest first; read one with --session ID (import, export, tokens, replay, compare)")
    return 0


def _cmd_presets(args: argparse.Namespace) -> int:
    from .core.presets import PRESETS, preset_description

    for name in PRESETS:
        print(f"{name:28} {preset_description(name)}")
    return 0


def _cmd_config(args: argparse.Namespace) -> int:
    from .cli_settings import read_config
    from .core.config import dump_config
    from .core.presets import preset

    # An old file's replay section is left out of the agent config it prints; read_config says so.
    cfg = read_config(args.config)[0] if args.config else preset(args.preset)
    sys.stdout.write(dump_config(cfg, args.format))
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from .bench import run_bench

    run_bench(sections=args.section, quick=args.quick, out=args.json)
    return 0


def add_session_option(sp: argparse.ArgumentParser) -> None:
    """``--session ID``, shared by every command that reads one transcript."""
    sp.add_argument(
        "--session",
        metavar="ID",
        help="Read this session of a file or folder that holds several (ids: `python -m lab sessions PATH`).",
    )


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m lab", description="Compaction Lab: import, count, replay and compare agent transcripts.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def add(name: str, fn: Callable[[argparse.Namespace], int], help_: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help_, description=help_)
        sp.set_defaults(func=fn)
        return sp

    sp = add("import", _cmd_import, "Import a transcript into the lab's JSON and print a summary.")
    cast(_Parser, sp).lists_formats = True
    sp.add_argument("path")
    sp.add_argument("--format", help="Skip auto-detection and read this format.")
    add_session_option(sp)
    sp.add_argument("--out", required=True, help="Where to write the lab JSON.")
    sp.add_argument("--counter", action="append", help="Token counter(s) for the summary (repeatable).")
    add_no_redact_option(sp)

    sp = add("export", _cmd_export, "Export a transcript to the Anthropic or OpenAI request shape.")
    sp.add_argument("path")
    sp.add_argument("--format", help="Skip auto-detection and read this format.")
    add_session_option(sp)
    sp.add_argument("--to", choices=["anthropic", "openai", "lab"], required=True)
    sp.add_argument("--out", required=True)
    pending = sp.add_mutually_exclusive_group()
    pending.add_argument(
        "--close-pending",
        dest="close_pending",
        action="store_const",
        const=True,
        help="Answer the last assistant turn's tool calls that have no result with an 'interrupted' error result "
        "(the default for --to anthropic and openai, so the request is one the API takes; asked for by name with --to lab).",
    )
    pending.add_argument(
        "--keep-pending",
        dest="close_pending",
        action="store_const",
        const=False,
        help="Leave unanswered tool calls as they are (the API refuses such a request; a warning says so).",
    )
    add_no_redact_option(sp)

    sp = add("tokens", _cmd_tokens, "Count a transcript's tokens with one or more counters.")
    sp.add_argument("path")
    sp.add_argument("--format")
    add_session_option(sp)
    sp.add_argument("--counter", action="append", help="minicode, chars/3.5, o200k, cl100k, calibrated, anthropic (repeatable).")
    sp.add_argument("--json", action="store_true", help="Print JSON.")

    sp = add("sessions", _cmd_sessions, "List the sessions of a file or folder that holds several (Goose, OpenCode, Aider, OpenHands, Cursor, Zed, Crush, the Agents SDK; a folder of session files; a zip of either), newest first.")
    sp.add_argument("path")
    sp.add_argument("--format", help="Skip auto-detection and read this format.")
    sp.add_argument("--json", action="store_true", help="Print JSON.")

    add("presets", _cmd_presets, "List the config presets.")

    sp = add("config", _cmd_config, "Print a preset or a config file as JSON, YAML or TOML.")
    g = sp.add_mutually_exclusive_group(required=True)
    g.add_argument("--preset")
    g.add_argument("--config", help="A config file to validate and convert.")
    sp.add_argument("--format", choices=["json", "yaml", "toml"], default="json")

    sp = add("bench", _cmd_bench, "Measure counters, imports and the pipeline; print ratios from this run.")
    sp.add_argument("--section", action="append", help="Run only these sections (repeatable).")
    sp.add_argument("--quick", action="store_true", help="Smaller generated inputs, for a fast look.")
    sp.add_argument("--json", help="Also write the results as JSON here.")

    from .cli_serve import add_serve_command

    add_serve_command(add)

    from .cli_replay import add_replay_commands

    add_replay_commands(add)

    from .cli_probe import add_probe_command

    add_probe_command(add)

    from .cli_sweep import add_sweep_command

    add_sweep_command(add)
    return p


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the process is: every cleanup a Ctrl-C runs (temp files, worker pools) runs for it too."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise _Terminated()


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """While the command runs, SIGTERM unwinds it like Ctrl-C (the default would die with temp files and workers left)."""
    try:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread: the host owns the signals
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        with _sigterm_as_interrupt():
            parser = build_parser()
            args = parser.parse_args(argv)
            return int(args.func(args))
    except _Terminated:
        print("error: terminated", file=sys.stderr)
        return 143
    except _UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except LabError as e:
        print(f"error: {str(e).splitlines()[0] if str(e) else type(e).__name__}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"error: {e.filename or ''}: {e.strerror or e}".replace(": : ", ": "), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
