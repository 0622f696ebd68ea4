"""``python -m lab serve``: the proxy's options, their checks, and the uvicorn run.

Bad options are ``LabError`` (one ``error:`` line, exit 2): a non-loopback
``--host`` without ``--allow-remote`` and ``LAB_SERVE_TOKEN``, a missing
config, a bad upstream URL. Starlette and uvicorn are imported only when the
command runs, so the rest of the CLI works without the ``serve`` extra; the
proxy's own modules (and the presets) are imported there too, for the same reason.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..errors import LabError
from .settings import read_config
from ..core.presets import preset
from ..core.store import FolderStore

if TYPE_CHECKING:  # pragma: no cover
    from ..serve import ServeOptions

__all__ = ["add_serve_command", "serve_options", "is_loopback", "TOKEN_ENV", "DEFAULT_PORT"]

TOKEN_ENV = "LAB_SERVE_TOKEN"
DEFAULT_PORT = 8787


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _url(text: str, what: str) -> str:
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise LabError(f"{what}: expected an http(s) URL, got {text!r}")
    return text.rstrip("/")


def serve_options(args: argparse.Namespace) -> ServeOptions:
    """The ``ServeOptions`` of parsed arguments; raises ``LabError`` on what must not run."""
    # lab.serve loads when this verb runs, not with the CLI.
    from ..serve import ServeOptions
    from ..serve.upstream import DEFAULT_ANTHROPIC, DEFAULT_OPENAI

    token = os.environ.get(TOKEN_ENV) or None
    if not is_loopback(args.host):
        if not args.allow_remote:
            raise LabError(f"--host {args.host} is not loopback: add --allow-remote (and set {TOKEN_ENV}) to listen there")
        if not token:
            raise LabError(f"--allow-remote needs a token: set {TOKEN_ENV}; clients send it in the x-lab-serve-token header")
    if args.config:
        config, _ = read_config(args.config)
    else:
        config = preset(args.preset)
    if args.max_body < 1024:
        raise LabError(f"--max-body must be at least 1024 bytes, got {args.max_body}")
    spill = Path(args.spill_dir).expanduser() if args.spill_dir else Path.home() / ".cache" / "compaction-lab" / "spill"
    return ServeOptions(
        config=config,
        mode=args.mode,
        upstream_anthropic=_url(args.upstream_anthropic or DEFAULT_ANTHROPIC, "--upstream-anthropic"),
        upstream_openai=_url(args.upstream_openai or DEFAULT_OPENAI, "--upstream-openai"),
        record=Path(args.record).expanduser() if args.record else None,
        spill_dir=spill,
        max_body=args.max_body,
        token=token,
    )


def _cmd_serve(args: argparse.Namespace) -> int:
    options = serve_options(args)
    try:
        import uvicorn

        from ..serve import build_app
    except ImportError as e:
        raise LabError(f"lab serve needs the serve extra: pip install 'compaction-lab[serve]' ({e})") from None
    # lab.serve loads when this verb runs, not with the CLI.
    from ..serve.recording import make_private_dir

    # Spill files are copies of tool outputs, recordings of whole conversations: both private to the user.
    for folder in (options.record, options.spill_dir):
        if folder is not None:
            try:
                make_private_dir(folder)
            except OSError as e:
                raise LabError(f"cannot create {folder}: {e.strerror or e}") from None
    days = options.config.spill.retention_days
    if options.spill_dir is not None and days > 0:
        # The config's retention, applied once at start: spilled sessions older than it go.
        FolderStore(options.spill_dir).cleanup(days * 86400)
    print(f"lab serve: {options.mode} mode on http://{args.host}:{args.port} (config {options.config.label}); "
          f"anthropic -> {options.upstream_anthropic}, openai -> {options.upstream_openai}", file=sys.stderr)
    # lab.serve loads when this verb runs, not with the CLI.
    from ..serve import listen_socket

    try:
        sock = listen_socket(args.host, args.port)
    except OSError as e:
        raise LabError(f"cannot listen on {args.host}:{args.port}: {e.strerror or e}") from None
    try:
        server = uvicorn.Server(uvicorn.Config(build_app(options), log_level="warning", access_log=False, lifespan="on"))
        server.run(sockets=[sock])
    finally:
        sock.close()
    return 0


def add_serve_command(add: Callable[[str, Callable[[argparse.Namespace], int], str], argparse.ArgumentParser]) -> None:
    sp = add("serve", _cmd_serve, "Run a config live: a local proxy in front of Claude Code, Codex or any OpenAI-compatible agent.")
    group = sp.add_mutually_exclusive_group()
    group.add_argument("--config", help="The exported config file (JSON, YAML or TOML).")
    group.add_argument("--preset", default="lab", help="A preset instead of a config file (default: lab, the lab's own).")
    sp.add_argument("--host", default="127.0.0.1", help="Address to listen on (default 127.0.0.1; others need --allow-remote).")
    sp.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"Port (default {DEFAULT_PORT}).")
    sp.add_argument("--mode", choices=("compact", "audit"), default="compact", help="compact: apply the config; audit: change nothing, record.")
    sp.add_argument("--record", help="Append every exchange to this folder (HTTP-log JSONL, one file per conversation).")
    sp.add_argument("--upstream-anthropic", help="Anthropic-compatible base URL (default https://api.anthropic.com).")
    sp.add_argument("--upstream-openai", help="OpenAI-compatible base URL (default https://api.openai.com).")
    sp.add_argument("--spill-dir", help="Where spilled tool outputs go (default ~/.cache/compaction-lab/spill).")
    sp.add_argument("--max-body", type=int, default=32 * 1024 * 1024, help="Largest request body in bytes (413 beyond; default 32 MiB).")
    sp.add_argument("--allow-remote", action="store_true", help=f"Allow a non-loopback --host; every request must then carry {TOKEN_ENV}.")
