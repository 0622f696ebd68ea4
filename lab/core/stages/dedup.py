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

Decisions are frozen: ``state.dedup_ledger`` keeps each stub byte for byte
and ``state.dedup_seen`` the reads that were kept. The index of sources
(``state.dedup_index``) always describes exactly the history given, so a read
can only ever be deduped against content that is still present and
uncompacted in it. Incrementally, the index is kept between requests in a
journalled cache and only the messages after the settled prefix are read; a
stage that rewrites earlier messages (a microcompact clearing a source, a
summary) lowers the settled prefix, the cache is rolled back to it and the
rest is read again, which gives the index a run from scratch would build.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import shlex
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Sequence

from pydantic import Field

from ..events import Event, StageContext, StageResult
from ..incremental import Journal, StageCache, open_cache, passthrough
from ..messages import Message, ToolResultBlock, ToolUseBlock
from .base import StageConfig

__all__ = ["DedupConfig", "DedupStage", "ReadTarget", "read_target", "is_write", "may_write", "parse_cat", "content_hash", "dedup_stub"]


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
        description="Shell tools: a plain 'cat PATH' counts as a read of PATH; any other command mentioning a read path invalidates it.",
    )
    readonly_commands: list[str] = Field(
        default_factory=lambda: ["cat", "head", "tail", "grep", "egrep", "fgrep", "rg", "ag", "ls", "wc", "nl", "file", "stat", "diff", "find", "tree", "echo", "pwd", "cd", "which", "sort", "uniq", "cut", "sed", "awk", "less", "more"],
        description="Shell commands that never write a file: a shell call made only of these (no redirection, no sed -i, no find -delete/-exec) does not invalidate the paths it mentions.",
    )
    partial_keys: list[str] = Field(
        default_factory=lambda: ["offset", "limit", "view_range", "start_line", "end_line", "line_range", "pages"],
        description="Input keys that make a read partial; a partial read is keyed with them so different slices never dedup.",
    )


_COMMAND_KEYS = ("command", "cmd")
# Shell syntax that makes a command more than a plain file read.
_SHELL_META = set("|&;<>()$`*?[]{}~\n")


@dataclass(frozen=True)
class ReadTarget:
    path: str
    # Stable key: normalised path plus the partial-read parameters, if any.
    key: str
    # What the stub shows: the path, plus the slice for partial reads.
    display: str


def content_hash(text: str) -> str:
    return hashlib.md5(text.encode("utf-8", "surrogatepass"), usedforsecurity=False).hexdigest()


def dedup_stub(display: str, index: int, message_id: str) -> str:
    return f"[Read deduplicated: {display}] File unchanged since last read. Original content at message index {index} (id {message_id})"


def _matches(entries: Sequence[str], use: ToolUseBlock) -> bool:
    for entry in entries:
        name, _, command = entry.partition(":")
        if use.name == name and (not command or use.input.get("command") == command):
            return True
    return False


def _path(use: ToolUseBlock, keys: Sequence[str]) -> str | None:
    for key in keys:
        value = use.input.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _command(use: ToolUseBlock) -> str | None:
    for key in _COMMAND_KEYS:
        value = use.input.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            # Codex style ["bash", "-lc", "cat x"]: the script is the last item.
            if len(value) >= 3 and value[-2] in ("-c", "-lc"):
                return value[-1]
            return shlex.join(value)
    return None


# Pure string functions over commands that recur on every request of a replay: memoised.
@lru_cache(maxsize=8192)
def parse_cat(command: str) -> tuple[str, tuple[str, ...]] | None:
    """``(path, flags)`` when ``command`` is a plain ``cat [flags] PATH``, else None."""
    if not command or any(ch in _SHELL_META for ch in command):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if len(words) < 2 or words[0] != "cat":
        return None
    flags = tuple(w for w in words[1:-1])
    if not all(f.startswith("-") and f != "-" for f in flags) or words[-1].startswith("-"):
        return None
    return words[-1], flags


_WRITE_FLAGS = {"sed": ("-i", "--in-place"), "find": ("-delete", "-exec", "-execdir", "-fprint", "-ok"), "awk": ("-i",)}
_PUNCTUATION = set("();<>|&")


def may_write(command: str, readonly: Sequence[str]) -> bool:
    """False only when every part of a shell command is a known read-only command."""
    return _may_write(command, tuple(readonly))


@lru_cache(maxsize=8192)
def _may_write(command: str, readonly: tuple[str, ...]) -> bool:
    if "$" in command or "`" in command:
        return True  # substitutions can run anything
    # An unquoted newline separates commands like ';' does; shlex would treat it as a space.
    lexer = shlex.shlex(command.replace("\n", ";\n"), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer) + [";"]
    except ValueError:
        return True
    allowed = set(readonly)
    segment: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        # punctuation_chars splits unquoted operators into their own words; quoted text stays inside one.
        if word and set(word) <= _PUNCTUATION:
            if word in (">", ">>", ">&", "&>") and i + 1 < len(words) and (words[i + 1].isdigit() or words[i + 1] == "/dev/null"):
                i += 2  # 2>&1, >/dev/null: no file is written
                continue
            if set(word) & set("<>()"):
                return True
            if segment:
                name = next((w for w in segment if "=" not in w), "")
                flags = _WRITE_FLAGS.get(name, ())
                if name not in allowed or any(w.startswith(f) for w in segment[1:] for f in flags):
                    return True
            segment = []
        else:
            segment.append(word)
        i += 1
    return False


def _key(path: str, params: dict[str, Any]) -> tuple[str, str]:
    norm = posixpath.normpath(path)
    if not params:
        return norm, path
    # NUL never occurs in a path, so a slice key can never collide with a whole-file key.
    key = norm + "\x00" + json.dumps(params, sort_keys=True, default=str)
    shown = ", ".join(f"{k}={json.dumps(v, default=str)}" for k, v in sorted(params.items()))
    return key, f"{path} ({shown})"


def read_target(use: ToolUseBlock, config: DedupConfig) -> ReadTarget | None:
    """The file a tool call reads, or None when it is not a read the stage understands."""
    if _matches(config.read_tools, use):
        path = _path(use, config.path_keys)
        if path is None:
            return None
        params = {k: use.input[k] for k in config.partial_keys if use.input.get(k) is not None}
    elif use.name in config.shell_tools:
        parsed = parse_cat(_command(use) or "")
        if parsed is None:
            return None
        path, flags = parsed
        params = {"cat_flags": list(flags)} if flags else {}
    else:
        return None
    key, display = _key(path, params)
    return ReadTarget(path=path, key=key, display=display)


def is_write(use: ToolUseBlock, config: DedupConfig) -> bool:
    return _matches(config.write_tools, use)


def _invalidate(index: dict[str, tuple[str, str]], use: ToolUseBlock, config: DedupConfig, journal: Journal | None = None, pos: int = 0) -> None:
    """Drop the index entries a write (or possibly-writing shell command) may have made stale."""
    def drop(key: str) -> None:
        if journal is None:
            del index[key]
        else:
            journal.delete(pos, index, key)

    if is_write(use, config):
        path = _path(use, config.path_keys)
        if path is None:
            # A write whose target we cannot see (a patch, say) may have touched anything.
            for key in list(index):
                drop(key)
            return
        norm = posixpath.normpath(path)
        for key in [k for k in index if k == norm or k.startswith(norm + "\x00")]:
            drop(key)
    elif use.name in config.shell_tools:
        command = _command(use) or ""
        if parse_cat(command) is not None or not may_write(command, config.readonly_commands):
            return
        for key in list(index):
            if key.split("\x00", 1)[0] in command:
                drop(key)


class _DedupCache(StageCache):
    """The index of sources, the calls and the message positions seen so far, all journalled."""

    def __init__(self, owner: object) -> None:
        super().__init__(owner)
        self.index: dict[str, tuple[str, str]] = {}
        self.uses: dict[str, ToolUseBlock] = {}
        # message id -> index of its first occurrence, for the stub's "message index N".
        self.positions: dict[str, int] = {}


class DedupStage:
    name = "dedup"

    def __init__(self, config: DedupConfig | None = None) -> None:
        self.config = config or DedupConfig()

    def __call__(self, messages: Sequence[Message], ctx: StageContext) -> StageResult:
        n = len(messages)
        if not self.config.enabled:
            return StageResult(passthrough(messages, ctx), unchanged=n)
        state, count = ctx.state, ctx.counter.count_text
        cache, start = open_cache(self, ctx, lambda: _DedupCache(self))
        journal, index, uses, positions = cache.journal, cache.index, cache.uses, cache.positions
        for i in range(start, n):
            mid = messages[i].id
            if mid not in positions:
                journal.set(i, positions, mid, i)
        targets: dict[str, ReadTarget | None] = {}
        ledger: dict[str, str] = {}
        seen: set[str] = set()
        fresh_ids: list[str] = []
        reapplied: list[str] = []
        freed = 0
        out: list[Message] | None = None
        first = n
        for i in range(start, n):
            m = messages[i]
            blocks: list | None = None
            for j, b in enumerate(m.content):
                if isinstance(b, ToolUseBlock):
                    journal.set(i, uses, b.id, b)
                    _invalidate(index, b, self.config, journal, i)
                    continue
                if not isinstance(b, ToolResultBlock):
                    continue
                tid = b.tool_use_id
                stub = state.dedup_ledger.get(tid, ledger.get(tid))
                if stub is not None:
                    if b.compacted is None:
                        blocks = blocks if blocks is not None else list(m.content)
                        blocks[j] = self._replace(b, stub)
                        reapplied.append(tid)
                        freed += count(b.content) - count(stub)
                    continue
                use = uses.get(tid)
                # A result the spill stage already replaced is sent as its stub: never a source, never a dedup.
                if b.compacted is not None or b.is_error or use is None or state.spill_ledger.get(tid) is not None:
                    continue
                if tid not in targets:
                    targets[tid] = read_target(use, self.config)
                target = targets[tid]
                if target is None:
                    continue
                digest = content_hash(b.content)
                entry = index.get(target.key)
                if entry is not None and entry[0] == digest and tid not in state.dedup_seen and tid not in seen:
                    stub = dedup_stub(target.display, positions[entry[1]], entry[1])
                    # A stub longer than the read would cost tokens instead of saving them.
                    if count(stub) < count(b.content):
                        blocks = blocks if blocks is not None else list(m.content)
                        blocks[j] = self._replace(b, stub)
                        ledger[tid] = stub
                        fresh_ids.append(tid)
                        freed += count(b.content) - count(stub)
                        continue
                journal.set(i, index, target.key, (digest, m.id))
                seen.add(tid)
            if blocks is not None:
                if out is None:
                    out, first = list(messages), i
                out[i] = m.model_copy(update={"content": tuple(blocks)})
        cache.upto = n
        state.dedup_ledger.update(ledger)
        state.dedup_seen.update(seen)
        state.dedup_index = index
        if not fresh_ids and not reapplied:
            return StageResult(passthrough(messages, ctx), unchanged=n)
        before = ctx.tokens(messages)
        detail = f"{len(fresh_ids)} unchanged re-read(s) deduplicated"
        if reapplied:
            detail += f", {len(reapplied)} frozen stub(s) re-applied"
        event = Event(
            stage=self.name,
            trigger="dedup",
            tokens_before=before,
            tokens_after=before - freed,
            ids=tuple(fresh_ids + reapplied),
            strategy="read_dedup",
            detail=detail,
        )
        assert out is not None
        return StageResult(out, (event,), unchanged=first)

    @staticmethod
    def _replace(block: ToolResultBlock, stub: str) -> ToolResultBlock:
        return block.model_copy(
            update={
                "content": stub,
                "compacted": "dedup",
                "original_chars": block.original_chars if block.original_chars is not None else len(block.content),
            }
        )
