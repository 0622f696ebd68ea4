"""Stage 3, read dedup: a re-read of an unchanged file becomes a stub pointing at the earlier read.

MiniCode runs this in the tool dispatcher, as each result arrives. Walking
the history in message order and deciding each read once gives the same
answers, which is how the replay uses it (it calls the stage as each result
comes in). A read of path P whose content hash (MD5, not for security, as in
MiniCode) equals the last recorded read of P becomes

    [Read deduplicated: P] File unchanged since last read. Original content at message index N (id MSGID)

A write or edit of P, or a shell command that mentions P and may write
(anything but a pipeline of known read-only commands), invalidates P's entry. Partial reads are keyed with their offset/limit/range, so different
slices never dedup against each other.

Paths are keyed by file, not by spelling: a relative path is resolved against
the working directory when it is known (``DedupConfig.cwd``, then the newest
``cd DIR`` prefix of a shell call), so ``Read /repo/a.py`` and
``cd /repo && cat a.py`` are the same file, and a write through either form
invalidates a read through the other. Where the directory is unknown, a
relative path stays as written and every match that may be the same file
counts as one (core/shell_paths.py). The directory is part of the journalled
memo, so incremental runs follow it exactly as a run from scratch does. The
stub shows the path as the read wrote it.

Decisions are frozen: the stage's state (``DedupState``) keeps each stub byte
for byte (``ledger``) and the reads that were kept (``seen``). The index of
sources always describes exactly the history given, so a read can only ever
be deduped against content that is still present and uncompacted in it. The
index is the stage's memo, which the Compactor keeps, and only the messages after the settled prefix are read; a
stage that rewrites earlier messages (a microcompact clearing a source, a
summary) lowers the settled prefix, the memo is rolled back to it and the
rest is read again, which gives the index a run from scratch would build.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from dataclasses import dataclass, field
from collections.abc import Sequence
from typing import Any

from pydantic import Field, field_validator

from ..events import Event
from ..incremental import Memo
from ..lru import SharedLRU
from ..messages import Message, ToolResultBlock, ToolUseBlock
from .base import StageConfig
from .contract import Decision, Stub, View
from ..shell_paths import call_workdir, command_text, matches_tool, is_windows_path, may_write, named_in, parse_cat, resolve, same_file, shell_cwd

__all__ = ["DedupConfig", "DedupState", "DedupStage", "MAX_DECODED_CONFIGS", "clear_decoded", "ReadTarget", "read_target", "is_write", "may_write", "parse_cat", "content_hash", "dedup_stub"]


class DedupConfig(StageConfig):
    read_tools: list[str] = Field(
        default_factory=lambda: ["Read", "read_file", "view", "str_replace_editor:view", "cat", "open", "read"],
        description="Tool names that read a file; 'tool:command' matches a tool whose 'command' input equals the command.",
    )
    write_tools: list[str] = Field(
        default_factory=lambda: ["Write", "Edit", "MultiEdit", "write_file", "edit_file", "str_replace_editor:create", "str_replace_editor:str_replace", "str_replace_editor:insert", "apply_patch", "edit", "create"],
        description="Tool names that write or edit a file and so invalidate its dedup entry.",
    )
    path_keys: list[str] = Field(
        default_factory=lambda: ["file_path", "path", "filename", "file", "notebook_path"],
        description="Input keys that may hold the file path, tried in order.",
    )
    shell_tools: list[str] = Field(
        default_factory=lambda: ["Bash", "bash", "shell", "execute_bash", "run_shell_command", "exec_command", "local_shell", "terminal"],
        description="Shell tools: a plain 'cat PATH' (alone or after 'cd DIR &&') counts as a read of PATH, 'cd DIR' moves the working directory, and any other command that may write and names a read file invalidates it.",
    )
    readonly_commands: list[str] = Field(
        default_factory=lambda: ["cat", "head", "tail", "grep", "egrep", "fgrep", "rg", "ag", "ls", "wc", "nl", "file", "stat", "diff", "find", "tree", "echo", "pwd", "cd", "which", "sort", "uniq", "cut", "sed", "awk", "less", "more"],
        description="Shell commands that never write a file: a shell call made only of these (no redirection, no sed -i, no find -delete/-exec) does not invalidate the paths it mentions.",
    )
    partial_keys: list[str] = Field(
        default_factory=lambda: ["offset", "limit", "view_range", "start_line", "end_line", "line_range", "pages"],
        description="Input keys that make a read partial; a partial read is keyed with them so different slices never dedup.",
    )
    cwd: str | None = Field(
        None,
        max_length=4096,
        description="The agent's starting working directory (absolute, e.g. /repo): relative paths are resolved against it, and against later 'cd DIR' commands. Empty: relative paths count as written until an absolute cd.",
    )

    @field_validator("cwd")
    @classmethod
    def _absolute_cwd(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        value = value.strip()
        if not value.startswith("/") or is_windows_path(value):
            raise ValueError(f"cwd must be an absolute POSIX path such as /repo, got {value!r}")
        return posixpath.normpath(value)


@dataclass(frozen=True)
class ReadTarget:
    path: str
    # Stable key: the path resolved against the working directory (when known) and normalised, plus the
    # partial-read parameters, if any.
    key: str
    # What the stub shows: the path as the call wrote it, plus the slice for partial reads.
    display: str


def content_hash(text: str) -> str:
    return hashlib.md5(text.encode("utf-8", "surrogatepass"), usedforsecurity=False).hexdigest()


def dedup_stub(display: str, index: int, message_id: str) -> str:
    return f"[Read deduplicated: {display}] File unchanged since last read. Original content at message index {index} (id {message_id})"


def _path(use: ToolUseBlock, keys: Sequence[str]) -> str | None:
    for key in keys:
        value = use.input.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _command(use: ToolUseBlock) -> str | None:
    return command_text(use.input)


def _key(path: str, params: dict[str, Any], cwd: str | None) -> tuple[str, str]:
    norm = resolve(path, cwd)
    if not params:
        return norm, path
    # NUL never occurs in a path, so a slice key can never collide with a whole-file key.
    key = norm + "\x00" + json.dumps(params, sort_keys=True, default=str)
    shown = ", ".join(f"{k}={json.dumps(v, default=str)}" for k, v in sorted(params.items()))
    return key, f"{path} ({shown})"


def read_target(use: ToolUseBlock, config: DedupConfig) -> ReadTarget | None:
    """The file a tool call reads, or None when it is not a read the stage understands.

    Relative paths resolve against ``config.cwd`` (and a ``cd DIR &&`` prefix of
    the call's own command); the stage also follows the ``cd`` of earlier calls.
    """
    return _target(use, config, config.cwd)


def _target(use: ToolUseBlock, config: DedupConfig, cwd: str | None) -> ReadTarget | None:
    """``read_target`` for a call made while the shell was in ``cwd``."""
    cwd = call_workdir(use, cwd)
    if matches_tool(config.read_tools, use):
        path = _path(use, config.path_keys)
        if path is None:
            return None
        params = {k: use.input[k] for k in config.partial_keys if use.input.get(k) is not None}
    elif use.name in config.shell_tools:
        cwd, _, body = shell_cwd(_command(use) or "", cwd)
        parsed = parse_cat(body)
        if parsed is None:
            return None
        path, flags = parsed
        params = {"cat_flags": list(flags)} if flags else {}
    else:
        return None
    key, display = _key(path, params, cwd)
    return ReadTarget(path=path, key=key, display=display)


def is_write(use: ToolUseBlock, config: DedupConfig) -> bool:
    return matches_tool(config.write_tools, use)


# What a call may have written: ("all",) a write whose target is not visible, ("file", resolved path),
# ("shell", command, directory it ran in) for a shell command that may write; None: nothing.
_WritePlan = tuple[str, ...] | tuple[str, str, str | None] | None


def _decide_write(use: ToolUseBlock, config: DedupConfig, cwd: str | None) -> _WritePlan:
    cwd = call_workdir(use, cwd)
    if is_write(use, config):
        path = _path(use, config.path_keys)
        return ("all",) if path is None else ("file", resolve(path, cwd))
    if use.name in config.shell_tools:
        command = _command(use) or ""
        run, _, body = shell_cwd(command, cwd)
        if parse_cat(body) is not None or not may_write(command, config.readonly_commands):
            return None
        return ("shell", command, run)
    return None


def _invalidate(index: dict[str, tuple[str, str]], plan: _WritePlan, memo: Memo) -> None:
    """Drop the index entries a call with write plan ``plan`` (``_decide_write``) may have made stale."""
    if plan is None or not index:
        return
    if plan[0] == "all":
        # A write whose target we cannot see (a patch, say) may have touched anything.
        stale = list(index)
    elif plan[0] == "file":
        stale = [k for k in index if same_file(k.split("\x00", 1)[0], plan[1])]
    else:
        command, run = plan[1], plan[2]
        stale = [k for k in index if named_in(k.split("\x00", 1)[0], command, run)]
    for key in stale:
        memo.delete(index, key)


# Configs whose decoded calls are kept for the next stage built from an equal config (see ``_decoded_for``).
MAX_DECODED_CONFIGS = 8
_DECODED: SharedLRU[dict[int, tuple[ToolUseBlock, str | None, ReadTarget | None, _WritePlan]]] = SharedLRU(MAX_DECODED_CONFIGS)


def _decoded_for(config: DedupConfig) -> dict[int, tuple[ToolUseBlock, str | None, ReadTarget | None, _WritePlan]]:
    """The decoded-call memory of every stage with this config: a call's decode is a pure function of the
    call, the config and the directory, and a slider's replays build new stages over the same call objects."""
    return _DECODED.get(config.fingerprint, dict)  # computed once per (frozen) config value


def clear_decoded() -> None:
    """Forget every decoded call (a bench's "first replay" decodes everything again)."""
    _DECODED.clear()


@dataclass
class DedupState:
    """The frozen decisions: tool_use_id -> the exact stub sent (``ledger``), and the reads looked at and kept (``seen``)."""

    ledger: dict[str, str] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)


class DedupStage:
    name = "dedup"
    State = DedupState

    # Bound on remembered calls (see ``_decode``); past it the memory starts again.
    max_calls = 20_000

    def __init__(self, config: DedupConfig | None = None) -> None:
        self.config = config or DedupConfig()
        # id(call) -> (call, directory, what it reads, what it may write). A pure function of the call,
        # the config and the directory, kept because a scan meets the same calls again after a rewrite
        # (the tail a summary keeps, the part after a clearing). The entry holds the call, so its id
        # cannot be reused while remembered.
        # Shared with every stage of an equal config (``_decoded_for``).
        self._calls = _decoded_for(self.config)

    def _decode(self, use: ToolUseBlock, cwd: str | None) -> tuple[ReadTarget | None, _WritePlan]:
        hit = self._calls.get(id(use))
        if hit is not None and hit[0] is use and hit[1] == cwd:
            return hit[2], hit[3]
        target, plan = _target(use, self.config, cwd), _decide_write(use, self.config, cwd)
        if len(self._calls) >= self.max_calls:
            self._calls.clear()
        self._calls[id(use)] = (use, cwd, target, plan)
        return target, plan

    def decide(self, view: View, config: DedupConfig, state: DedupState) -> Decision:
        if not config.enabled:
            return Decision()
        # The decoded calls are remembered per config: another config than the stage's decodes with its own memory.
        scan = _Scan(self if config is self.config else DedupStage(config), view, state)
        view.note(scan.positions, scan.message)
        # The new decisions are frozen in the state (the ledger, the reads kept) once the whole history is read.
        frozen = DedupState(scan.ledger, scan.seen) if scan.ledger or scan.seen else None
        if not scan.fresh_ids and not scan.reapplied:
            return Decision(state=frozen)
        before = view.tokens()
        detail = f"{len(scan.fresh_ids)} unchanged re-read(s) deduplicated"
        if scan.reapplied:
            detail += f", {len(scan.reapplied)} frozen stub(s) re-applied"
        event = Event(
            stage=self.name,
            trigger="dedup",
            tokens_before=before,
            tokens_after=before - scan.freed,
            ids=tuple(scan.fresh_ids + scan.reapplied),
            strategy="read_dedup",
            detail=detail,
        )
        return Decision(tuple(scan.changes), (event,), frozen)


class _Scan:
    """One decision of the stage: the note passes that read each new message, and what they decided.

    The memo holds ``index`` (the sources: key -> (content hash, message id)),
    ``targets`` (tool_use id -> what the call reads, decided when it was made,
    in the directory of that moment), ``shell`` ("cwd" -> the shell's working
    directory after the calls noted so far; None: unknown) and ``positions``
    (message id -> index of its first occurrence, for the stub's "message
    index N"). New decisions are collected here and returned as the stage's
    next state once the whole history is read.
    """

    def __init__(self, stage: DedupStage, view: View, state: DedupState) -> None:
        self.stage, self.state, self.claims, self.count = stage, state, view.claims, view.counter.count_text
        self.ledger: dict[str, str] = {}
        self.seen: set[str] = set()
        self.fresh_ids: list[str] = []
        self.reapplied: list[str] = []
        self.freed = 0
        self.changes: list[Stub] = []

    @staticmethod
    def positions(memo: Memo, i: int, m: Message) -> None:
        positions = memo.table("positions")
        if m.id not in positions:
            memo.set(positions, m.id, i)

    def message(self, memo: Memo, i: int, m: Message) -> None:
        state, count, ledger, seen, claims = self.state, self.count, self.ledger, self.seen, self.claims
        index, targets, positions = memo.table("index"), memo.table("targets"), memo.table("positions")
        for j, b in enumerate(m.content):
            if isinstance(b, ToolUseBlock):
                self._call(b, memo, index, targets)
                continue
            if not isinstance(b, ToolResultBlock):
                continue
            tid = b.tool_use_id
            stub = state.ledger.get(tid, ledger.get(tid))
            if stub is not None:
                if b.compacted is None:
                    self.changes.append(Stub(i, j, stub, "dedup", claim=True))
                    self.reapplied.append(tid)
                    self.freed += count(b.content) - count(stub)
                continue
            target = targets.get(tid)
            # A result the spill stage already replaced is sent as its stub: never a source, never a dedup.
            if b.compacted is not None or b.is_error or target is None or claims.get(tid) == "spill":
                continue
            digest = content_hash(b.content)
            entry = index.get(target.key)
            if entry is not None and entry[0] == digest and tid not in state.seen and tid not in seen:
                stub = dedup_stub(target.display, positions[entry[1]], entry[1])
                # A stub longer than the read would cost tokens instead of saving them.
                if count(stub) < count(b.content):
                    self.changes.append(Stub(i, j, stub, "dedup", claim=True))
                    ledger[tid] = stub
                    self.fresh_ids.append(tid)
                    self.freed += count(b.content) - count(stub)
                    continue
            memo.set(index, target.key, (digest, m.id))
            seen.add(tid)

    def _call(self, use: ToolUseBlock, memo: Memo, index: dict[str, tuple[str, str]], targets: dict[str, ReadTarget | None]) -> None:
        """A tool call: note what it reads, drop what it may write, follow its ``cd``."""
        stage = self.stage
        shell = memo.table("shell", {"cwd": stage.config.cwd})
        cwd = shell["cwd"]
        target, plan = stage._decode(use, cwd)
        if target is not None or use.id in targets:
            memo.set(targets, use.id, target)
        _invalidate(index, plan, memo)
        if use.name in stage.config.shell_tools:
            after = shell_cwd(_command(use) or "", cwd)[1]
            if after != cwd:
                memo.set(shell, "cwd", after)
