"""``python -m lab``: the headless front end's parser, and the one place its errors become exit codes.

Every subcommand turns a ``LabError`` (or an unreadable path) into one line,
``error: ...``, and exit status 2, so scripts can tell bad input from a crash.
SIGTERM unwinds a command like Ctrl-C (temp files removed, worker processes
ended) and exits 143 with ``error: terminated``.

The verbs live in their own modules, each registering through ``add(name, fn, help)``:
``transcripts`` (import, export, tokens, sessions), ``configs`` (presets, config), ``bench``,
``serve``, ``replay`` (replay, compare), ``probe`` and ``sweep``. They import ``lab.cli.common``
and the layers below; this module imports them, and nothing imports this module but
``lab.__main__`` and the ``compaction-lab`` script. A new verb: a module with an
``add_<verb>_command(add)``, called from ``build_parser``.
"""

from __future__ import annotations

import argparse
import signal
import sys
from contextlib import contextmanager
from collections.abc import Callable, Iterator, Sequence

from ..errors import LabError
from .bench import add_bench_command
from .common import Parser, UsageError
from .configs import add_config_commands
from .probe import add_probe_command
from .replay import add_replay_commands
from .serve import add_serve_command
from .sweep import add_sweep_command
from .transcripts import add_transcript_commands

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="python -m lab", description="Compaction Lab: import, count, replay and compare agent transcripts.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)

    def add(name: str, fn: Callable[[argparse.Namespace], int], help_: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help_, description=help_)
        sp.set_defaults(func=fn)
        return sp

    # In this order in --help.
    add_transcript_commands(add)
    add_config_commands(add)
    add_bench_command(add)
    add_serve_command(add)
    add_replay_commands(add)
    add_probe_command(add)
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
    except UsageError as e:
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
