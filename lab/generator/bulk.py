"""Stream a large Claude-Code-shaped JSONL session to disk, for the import bench.

Nothing but the current turn is held in memory: the builder keeps only a
bounded set of re-readable files, and each message is written as soon as it
is made. Entries follow Claude Code's layout: one line per content block of an
assistant message (all sharing ``message.id``), one ``user`` line per tool
result, each line chained to the previous one by ``parentUuid``.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path
from typing import IO, Any
from collections.abc import Mapping

from ..core.messages import Message, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from ..errors import ConfigError
from .config import GeneratorConfig, parse_generator_config
from .session import SessionBuilder

__all__ = ["generate_jsonl_bytes", "claude_code_entries"]

_VERSION = "1.0.98"


def _iso(message: Message) -> str:
    ts = message.timestamp
    assert ts is not None
    return ts.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond // 1000:03d}Z"


def _sub_uuid(message_id: str, j: int) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"lab-generate:{message_id}/{j}"))


def _anthropic_id(prefix: str, message_id: str) -> str:
    return prefix + hashlib.sha1(message_id.encode(), usedforsecurity=False).hexdigest()[:24]


def _block(b: Any) -> dict[str, Any]:
    if isinstance(b, TextBlock):
        return {"type": "text", "text": b.text}
    if isinstance(b, ThinkingBlock):
        return {"type": "thinking", "thinking": b.thinking, "signature": ""}
    if isinstance(b, ToolUseBlock):
        return {"type": "tool_use", "id": b.id, "name": b.name, "input": b.input}
    raise TypeError(f"unexpected block {type(b).__name__}")  # pragma: no cover


def claude_code_entries(message: Message, parent: str | None, *, session_id: str, cwd: str, model: str) -> list[dict[str, Any]]:
    """The JSONL entries Claude Code writes for one message (none for a system prompt)."""
    if message.role == "system":
        return []
    base = {"isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": session_id, "version": _VERSION, "gitBranch": "main"}
    out: list[dict[str, Any]] = []
    if message.role == "assistant":
        usage = message.usage
        u = {"input_tokens": usage.input_tokens, "cache_creation_input_tokens": usage.cache_write_tokens,
             "cache_read_input_tokens": usage.cache_read_tokens, "output_tokens": usage.output_tokens} if usage else {}
        mid, rid = _anthropic_id("msg_01", message.id), _anthropic_id("req_011C", message.id)
        for j, b in enumerate(message.content):
            own = _sub_uuid(message.id, j)
            stop = ("tool_use" if isinstance(b, ToolUseBlock) else "end_turn") if j == len(message.content) - 1 else None
            body = {"model": model, "id": mid, "type": "message", "role": "assistant", "content": [_block(b)],
                    "stop_reason": stop, "stop_sequence": None, "usage": u}
            out.append({"parentUuid": parent, **base, "message": body, "requestId": rid, "type": "assistant", "uuid": own, "timestamp": _iso(message)})
            parent = own
        return out
    for j, b in enumerate(message.content):
        own = message.id if j == 0 else _sub_uuid(message.id, j)
        if isinstance(b, ToolResultBlock):
            res: dict[str, Any] = {"tool_use_id": b.tool_use_id, "type": "tool_result", "content": b.content}
            if b.is_error:
                res["is_error"] = True
            entry = {"parentUuid": parent, **base, "type": "user", "message": {"role": "user", "content": [res]}, "uuid": own, "timestamp": _iso(message)}
            if b.is_error and b.content:
                # Claude Code repeats a failed call's message here; importers must ignore it.
                entry["toolUseResult"] = "Error: " + b.content.splitlines()[0][:200]
        else:
            entry = {"parentUuid": parent, **base, "type": "user", "message": {"role": "user", "content": b.text if isinstance(b, TextBlock) else ""}, "uuid": own, "timestamp": _iso(message)}
        out.append(entry)
        parent = own
    return out


def _write(fh: IO[bytes], entries: list[dict[str, Any]]) -> int:
    n = 0
    for e in entries:
        line = (json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        fh.write(line)
        n += len(line)
    return n


def generate_jsonl_bytes(path: str | Path, target_bytes: int, seed: int = 0, *, config: GeneratorConfig | Mapping[str, Any] | None = None) -> int:
    """Write a Claude-Code-shaped JSONL session of about ``target_bytes`` to ``path``; return bytes written.

    The knobs of ``config`` apply (tool mix, sizes, errors, CJK); ``requests``
    and ``planted_facts`` are ignored, since the session simply runs until the
    file is big enough. Outputs are capped at 1/40 of the target so the last
    turn cannot overshoot it by much.
    """
    if target_bytes < 1_000:
        raise ConfigError(f"target_bytes must be >= 1000, got {target_bytes}")
    cfg = parse_generator_config(config, seed=seed, planted_facts=0)
    cap = max(200, min(cfg.max_output_chars, target_bytes // 40))
    cfg = parse_generator_config(cfg, max_output_chars=cap, typical_output_chars=min(cfg.typical_output_chars, cap))
    b = SessionBuilder(cfg)
    user_rate = cfg.user_turns / cfg.requests
    session_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"lab-generate-bulk:{seed}"))
    common = {"session_id": session_id, "cwd": b.ws.root, "model": cfg.model}
    parent: str | None = None
    written = 0
    with open(path, "wb") as fh:
        for m in b.opening([]):
            entries = claude_code_entries(m, parent, **common)
            written += _write(fh, entries)
            parent = entries[-1]["uuid"] if entries else parent
        while written < target_bytes:
            turn = [b.report_turn(), b.user_turn()] if b.rng.random() < user_rate else b.tool_turn()
            for m in turn:
                entries = claude_code_entries(m, parent, **common)
                written += _write(fh, entries)
                parent = entries[-1]["uuid"]
        written += _write(fh, claude_code_entries(b.final_turn(), parent, **common))
    return written
