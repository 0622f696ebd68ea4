"""Shell working directory and path identity: what a call reads, where it runs, and what it may write.

Read dedup (``stages/dedup.py``) decides with these which reads name the same
file and which commands may have changed it; command classification
(``commands.py``) and the summary's file sections (``summarizers/sections.py``)
use the same identity, so the three agree on what "one file" is. All of these
are pure string functions; the ones called on every request of a replay are
memoised.

Working directory. A shell keeps a working directory that ``cd`` changes, so
the same file can be named ``/repo/src/a.py`` by one call and ``src/a.py`` by
the next. Read dedup tracks it: ``shell_cwd`` reads the ``cd DIR`` prefix of a
command (a command that is ``cd DIR``, or starts with ``cd DIR &&`` or
``cd DIR;``, possibly several in a row) and ``resolve`` makes a relative path
absolute against the directory known at that point. What cannot be known is
``None``: before any absolute ``cd`` (unless the config gives one), after
``cd`` with no argument, ``cd -``, ``cd ~``, a variable, or a command that
changes directory anywhere but its prefix. A relative path then stays as
written. ``~`` is never expanded and Windows-style paths are left alone.

Resolved keys come in two kinds: absolute (the file is known) and relative
(relative to a directory we do not know). Two keys may name the same file
when they are equal, or when one is relative and the other ends with it
(``same_file``). A shell command may name a file by its full path, by its
path relative to the directory it runs in, or, when that directory is not
known, by any path ending in its name (``named_in``). Every "may be" counts as
yes: a missed invalidation could dedup a stale read, an extra one only costs
a later dedup.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from functools import lru_cache
from collections.abc import Sequence
from typing import Any

from .messages import ToolUseBlock

__all__ = ["COMMAND_MEMO", "command_text", "parse_cat", "may_write", "parse_cd", "change_dir", "shell_cwd", "resolve", "same_file", "named_in", "is_windows_path", "matches_tool", "call_workdir"]

_COMMAND_KEYS = ("command", "cmd")
# Shell syntax that makes a command more than a plain file read.
_SHELL_META = set("|&;<>()$`*?[]{}~\n")


def command_text(inputs: dict[str, Any]) -> str | None:
    """The shell script of a shell tool call's input, or None when it has none."""
    for key in _COMMAND_KEYS:
        value = inputs.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            # Codex style ["bash", "-lc", "cat x"]: the script is the last item.
            if len(value) >= 3 and value[-2] in ("-c", "-lc"):
                return value[-1]
            return shlex.join(value)
    return None


# Pure string functions over commands that recur on every request of a replay: memoised. A session
# repeats a command close to where it ran before (the corpus's sessions name at most a few hundred
# distinct ones, all found again in 256 entries), while a memo's entries live to the end of the
# replay: 8,192 of them were 5 MB of a 100,000-message replay's peak, and they found nothing more
# (a long session's far repeats are further apart than any of these sizes). So each holds the last
# ``COMMAND_MEMO`` commands.
COMMAND_MEMO = 1024


@lru_cache(maxsize=COMMAND_MEMO)
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


@lru_cache(maxsize=COMMAND_MEMO)
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


# -- working directory --------------------------------------------------------------

# A directory word we can read exactly: quoted text without expansions, or plain characters.
# One character per plain step (no nested repeat), so a failed match backtracks in linear time.
_DIR_WORD = r"""(?:'[^']*'|"[^"\\$`]*"|[^\s'"\\;&|<>()`$*?\[\]{}])+"""
# One leading "cd [DIR]" and the separator after it. Anything stranger than _DIR_WORD is still
# consumed (up to the separator) so the rest of the command is found, but gives an unknown directory.
_CD_STEP = re.compile(rf"[ \t]*cd(?:[ \t]+(?:(?P<dir>{_DIR_WORD})|(?P<odd>[^\s;&|]+)))?[ \t]*(?P<sep>&&|;|\n|\Z)")
# A directory change anywhere in a command (quoted text included: when unsure, assume it ran).
_CHDIR = re.compile(r"(?:^|[\s;&|(])(?:cd|pushd|popd)(?=$|[\s;&|)])")


def is_windows_path(path: str) -> bool:
    """``C:\\x``, ``C:/x``, ``\\\\server\\share`` or any backslash: never resolved against a POSIX directory."""
    # Plain string tests: this runs for every index entry on every write.
    return "\\" in path or (len(path) > 2 and path[1] == ":" and path[2] == "/" and path[0].isalpha())


@lru_cache(maxsize=COMMAND_MEMO)
def parse_cd(command: str) -> tuple[tuple[str | None, ...], str] | None:
    """The directories of a command's leading ``cd`` steps (None where unknowable) and the rest.

    None when the command does not start with ``cd``.
    """
    dirs: list[str | None] = []
    pos = 0
    while (m := _CD_STEP.match(command, pos)) is not None:
        dirs.append(_cd_target(m.group("dir")) if m.group("odd") is None else None)
        pos = m.end()
        if not m.group("sep"):
            break
    if not dirs:
        return None
    return tuple(dirs), command[pos:].lstrip(" \t")


def _cd_target(word: str | None) -> str | None:
    if word is None:
        return None  # plain "cd" goes home, which we do not know
    try:
        (target,) = shlex.split(word)
    except ValueError:
        return None
    # "cd -" goes back, "cd -P x" takes options, "~" is never expanded.
    if not target or target.startswith(("-", "~")) or is_windows_path(target):
        return None
    return target


def change_dir(cwd: str | None, target: str | None) -> str | None:
    """The directory after ``cd target`` run in ``cwd`` (None: unknown)."""
    if target is None:
        return None
    if target.startswith("/"):
        return posixpath.normpath(target)
    return None if cwd is None else posixpath.normpath(posixpath.join(cwd, target))


@lru_cache(maxsize=COMMAND_MEMO)
def shell_cwd(command: str, cwd: str | None) -> tuple[str | None, str | None, str]:
    """For a command run in ``cwd``: the directory its body runs in, the shell's directory after it, and the body.

    The body is the command without its leading ``cd`` steps. A directory
    change anywhere else (``make && cd build``, ``(cd x; rm a)``) makes both
    directories unknown: the body may run anywhere, and whether the shell
    stayed there we cannot tell.
    """
    parsed = parse_cd(command)
    dirs: tuple[str | None, ...]
    if parsed is None:
        dirs, body = (), command
    else:
        dirs, body = parsed
    run = cwd
    for target in dirs:
        run = change_dir(run, target)
    if _CHDIR.search(body):
        return None, None, body
    return run, run, body


def resolve(path: str, cwd: str | None) -> str:
    """The key path of ``path`` named in ``cwd``: absolute when it can be known, else normalised as written."""
    if cwd is None or path.startswith(("/", "~")) or is_windows_path(path):
        return posixpath.normpath(path)
    return posixpath.normpath(posixpath.join(cwd, path))


def _unanchored(path: str) -> str:
    """A relative key without its leading ``..``, ``.`` and ``~`` parts: what any absolute name of it ends with."""
    parts = path.split("/")
    while parts and parts[0] in ("..", ".", "~", ""):
        parts.pop(0)
    return "/".join(parts)


def same_file(a: str, b: str) -> bool:
    """Whether two key paths may name the same file."""
    if a == b:
        return True
    a_abs, b_abs = a.startswith("/"), b.startswith("/")
    if (a_abs and b_abs) or is_windows_path(a) or is_windows_path(b):
        return False  # two known files, or a Windows path left alone: only the very same spelling matches
    ta = a if a_abs else _unanchored(a)
    tb = b if b_abs else _unanchored(b)
    if not ta or not tb:
        return True  # "..", ".": some directory we cannot place
    return ta == tb or ta.endswith("/" + tb) or tb.endswith("/" + ta)


@lru_cache(maxsize=4096)
def _name_pattern(name: str) -> re.Pattern[str]:
    # The name as a whole path component: "a.py" in "src/a.py" or "'a.py'", not in "data.py" or "a.pyc".
    return re.compile(r"(?<![\w.-])" + re.escape(name) + r"(?![\w-]|\.\w)")


def named_in(path: str, command: str, cwd: str | None) -> bool:
    """Whether a shell command run in ``cwd`` may name the file at key ``path``."""
    if path in command:
        return True
    if cwd is not None and path.startswith("/"):
        # Both known: the command names it by its full path or relative to where it runs.
        return posixpath.relpath(path, cwd) in command
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    if name in ("", ".", ".."):
        return True
    return name in command and _name_pattern(name).search(command) is not None


@lru_cache(maxsize=64)
def _tool_table(entries: tuple[str, ...]) -> dict[str, frozenset[str] | None]:
    """Tool name -> the 'command' inputs that match it (None: any), from entries like 'Read' or 'tool:command'."""
    table: dict[str, set[str] | None] = {}
    for entry in entries:
        name, _, command = entry.partition(":")
        if not command:
            table[name] = None
        else:
            commands = table.setdefault(name, set())
            if commands is not None:
                commands.add(command)
    return {name: None if commands is None else frozenset(commands) for name, commands in table.items()}


def matches_tool(entries: Sequence[str], use: ToolUseBlock) -> bool:
    # Called for every tool call a scan meets, twice: a table lookup instead of a walk over the entries.
    table = _tool_table(tuple(entries))
    if use.name not in table:
        return False
    commands = table[use.name]
    if commands is None:
        return True
    command = use.input.get("command")
    return isinstance(command, str) and command in commands


# Input keys naming the directory one call runs in (Codex's shell tool: workdir), without moving the shell.
_WORKDIR_KEYS = ("workdir", "working_directory", "cwd")


def call_workdir(use: ToolUseBlock, cwd: str | None) -> str | None:
    """The directory ``use`` runs in: its own workdir input when it names one, else ``cwd``."""
    for key in _WORKDIR_KEYS:
        value = use.input.get(key)
        if isinstance(value, str) and value.strip():
            return change_dir(cwd, value.strip())
    return cwd
