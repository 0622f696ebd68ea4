"""What a tool call does to the workspace, and how it ended: files read and written, commands run, errors.

An agent works through two kinds of tools. Structured ones name the file in
their input (``Read``, ``Edit``, ``str_replace_based_edit_tool``,
``apply_patch``, ``write_file``...). A shell runs a script, and the files hide
in it: ``sed -n 1,40p f`` reads, ``sed -i``, ``cat > f <<EOF``, ``tee``,
``>>``, ``git apply``, ``patch``, ``mv``, ``cp`` and ``rm`` write. Both come
out as one ``ToolAction``: its kind (``read``, ``write``, ``run`` or
``search``), the paths it names, the script, and a short line saying what
changed.

Shell parsing is best effort and never raises: ``shlex`` splits words and
operators, a few regexes take heredoc bodies and ``s/old/new/`` scripts apart,
and what cannot be read (an unclosed quote, ``$(...)``) is simply not
reported. Relative paths are resolved only against the command's own leading
``cd DIR``, the one directory that is certain; Windows paths are kept as
written.

``result_outcome`` reads a tool result the way a person skims it: a
``<returncode>``, "Exit code: N" or ``is_error`` flag, and the line that says
what went wrong (a traceback's exception line, ``error:``, ``fatal:``,
``FAILED``).
"""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass
from functools import lru_cache
from collections.abc import Iterator
from typing import Any, Literal

from .messages import ToolUseBlock
from .shell_paths import COMMAND_MEMO, command_text, is_windows_path, resolve, shell_cwd

__all__ = [
    "ActionKind",
    "FileChange",
    "ToolAction",
    "Outcome",
    "PATH_KEYS",
    "tool_path",
    "tool_action",
    "shell_action",
    "patch_changes",
    "replacement",
    "result_outcome",
]

ActionKind = Literal["read", "write", "run", "search"]

PATH_KEYS = ("file_path", "path", "filename", "file", "notebook_path", "target_file", "absolute_path")

# How long an excerpt of old or new text may be in a "what changed" line.
EXCERPT = 60


# Slots on the values ``shell_action``'s cache keeps (thousands of them in a long session): no ``__dict__`` each.
@dataclass(frozen=True, slots=True)
class FileChange:
    path: str
    what: str


@dataclass(frozen=True, slots=True)
class ToolAction:
    """What one tool call does: ``paths`` are every file it names, ``reads`` and ``writes`` split them."""

    kind: ActionKind
    tool: str
    paths: tuple[str, ...] = ()
    command: str | None = None
    change: str | None = None
    reads: tuple[str, ...] = ()
    writes: tuple[FileChange, ...] = ()


def tool_path(block: ToolUseBlock) -> str | None:
    for key in PATH_KEYS:
        value = block.input.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _excerpt(text: str, limit: int = EXCERPT) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "..."


def _lines(text: str) -> str:
    n = len(text.splitlines())
    return f"{n} line" if n == 1 else f"{n} lines"


def replacement(old: str, new: str) -> str:
    """``replaced "a" with "b"``, showing only the part that differs (widened to whole words)."""
    if not old:
        return f'inserted "{_excerpt(new)}"'
    start = 0
    limit = min(len(old), len(new))
    while start < limit and old[start] == new[start]:
        start += 1
    end = 0
    while end < limit - start and old[len(old) - 1 - end] == new[len(new) - 1 - end]:
        end += 1
    # Widen to word edges so the excerpt reads as code, not as a cut identifier.
    while start > 0 and (old[start - 1].isalnum() or old[start - 1] == "_"):
        start -= 1
    while end > 0 and (old[len(old) - end].isalnum() or old[len(old) - end] == "_"):
        end -= 1
    a, b = old[start : len(old) - end], new[start : len(new) - end]
    if not a.strip() and not b.strip():
        a, b = old, new  # only whitespace differs: show the lines themselves
    elif not a.strip():
        # Nothing was taken out: say where the new text went, by what stands before it.
        before = " ".join(old[:start].split())[-30:]
        return f'inserted "{_excerpt(b)}" after "{before}"' if before else f'inserted "{_excerpt(b)}" at the start'
    if not b.strip():
        return f'removed "{_excerpt(a)}"'
    return f'replaced "{_excerpt(a)}" with "{_excerpt(b)}"'


# -- patches ------------------------------------------------------------------------

_ENVELOPE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+?)\s*$")
_MOVE = re.compile(r"^\*\*\* Move to: (.+?)\s*$")
_DIFF_GIT = re.compile(r"^diff --git a/(\S+) b/(\S+)")
_PLUS_FILE = re.compile(r"^\+\+\+ (?:b/)?(\S+)")
_MINUS_FILE = re.compile(r"^--- (?:a/)?(\S+)")


def _counted(kind: str, plus: int, minus: int, first: str | None) -> str:
    if kind == "Add":
        return f"added ({plus} line{'' if plus == 1 else 's'})"
    if kind == "Delete":
        return "deleted"
    text = f"updated (+{plus} -{minus})"
    return f'{text}: "{_excerpt(first)}"' if first else text


def patch_changes(text: str) -> tuple[FileChange, ...]:
    """The files a Codex ``*** Begin Patch`` envelope or a unified diff changes, each with its line counts."""
    changes: list[FileChange] = []
    kind: str | None = None
    path = ""
    plus = minus = 0
    first: str | None = None
    moved: str | None = None

    def flush() -> None:
        if kind is None:
            return
        changes.append(FileChange(path, _counted(kind, plus, minus, first) + (f", moved to {moved}" if moved else "")))
        if moved:
            changes.append(FileChange(moved, f"moved from {path}"))

    lines = text.splitlines()
    skip = False
    for i, line in enumerate(lines):
        if skip:
            skip = False
            continue
        head = _ENVELOPE.match(line) or _DIFF_GIT.match(line)
        # "--- x" is a file header only right before "+++ y"; elsewhere it is a removed line that began with "--".
        pair = line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")
        if head is not None:
            flush()
            kind, path = (head.group(1), head.group(2)) if head.re is _ENVELOPE else ("Update", head.group(2))
            plus = minus = 0
            first = moved = None
        elif pair:
            skip = True
            source, target = _MINUS_FILE.match(line), _PLUS_FILE.match(lines[i + 1])
            src = source.group(1) if source else ""
            dst = target.group(1) if target else ""
            name, new_kind = (src, "Delete") if dst == "/dev/null" else (dst, "Add" if src == "/dev/null" else "Update")
            if kind is None or name != path:
                flush()
                path, plus, minus, first, moved = name, 0, 0, None, None
            kind = new_kind
        elif (m := _MOVE.match(line)) is not None:
            moved = m.group(1)
        elif kind is not None and line.startswith("+"):
            plus += 1
            if first is None and line[1:].strip():
                first = line[1:]
        elif kind is not None and line.startswith("-"):
            minus += 1
    flush()
    return tuple(changes)


def _patch_text(name: str, inputs: dict[str, Any]) -> str | None:
    for key in ("input", "patch", "diff"):
        value = inputs.get(key)
        if isinstance(value, str) and ("*** Begin Patch" in value or name == "apply_patch" or value.startswith(("diff --git", "--- "))):
            return value
    command = inputs.get("command")
    if isinstance(command, list) and len(command) == 2 and command[0] == "apply_patch" and isinstance(command[1], str):
        return command[1]
    return None


# -- structured tools ---------------------------------------------------------------

_EDITOR_COMMANDS = frozenset(("view", "create", "str_replace", "insert", "undo_edit", "write"))
_SEARCH_WORDS = ("grep", "glob", "search", "find", "list", "ls")
_WRITE_WORDS = ("write", "create", "edit", "replace", "save", "insert", "patch", "delete", "remove")


def _action(kind: ActionKind, tool: str, reads: tuple[str, ...] = (), writes: tuple[FileChange, ...] = (), command: str | None = None) -> ToolAction:
    paths = tuple(dict.fromkeys((*reads, *(w.path for w in writes))))
    change: str | None = None
    if len(writes) == 1:
        change = writes[0].what
    elif writes:
        change = "; ".join(f"{w.path}: {w.what}" for w in writes)
    return ToolAction(kind, tool, paths, command, change, reads, writes)


def _str(inputs: dict[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = inputs.get(key)
        if isinstance(value, str):
            return value
    return None


def _edit_change(inputs: dict[str, Any]) -> str | None:
    """What an edit-shaped input changes, or None when it is not one."""
    edits = inputs.get("edits")
    if isinstance(edits, list) and edits and all(isinstance(e, dict) for e in edits):
        changes = [c for c in (_edit_change(e) for e in edits) if c]
        if changes:
            return changes[0] if len(changes) == 1 else f"{len(changes)} edits, first {changes[0]}"
    old = _str(inputs, "old_string", "old_str", "search")
    new = _str(inputs, "new_string", "new_str", "replace")
    if old is None or new is None:
        return None
    text = replacement(old, new)
    return text + " (every occurrence)" if inputs.get("replace_all") is True else text


def _editor_action(name: str, sub: str, path: str, inputs: dict[str, Any]) -> ToolAction:
    if sub == "view":
        return _action("read", name, reads=(path,))
    if sub in ("create", "write"):
        body = _str(inputs, "file_text", "content") or ""
        return _action("write", name, writes=(FileChange(path, f"created ({_lines(body)})"),))
    if sub == "insert":
        what = f'inserted after line {inputs.get("insert_line")}: "{_excerpt(_str(inputs, "new_str", "text") or "")}"'
        return _action("write", name, writes=(FileChange(path, what),))
    if sub == "undo_edit":
        return _action("write", name, writes=(FileChange(path, "last edit undone"),))
    return _action("write", name, writes=(FileChange(path, _edit_change(inputs) or "edited"),))


def _structured(name: str, inputs: dict[str, Any]) -> ToolAction | None:
    path = next((v.strip() for k in PATH_KEYS if isinstance(v := inputs.get(k), str) and v.strip()), None)
    sub = inputs.get("command")
    if path and isinstance(sub, str) and sub in _EDITOR_COMMANDS:
        return _editor_action(name, sub, path, inputs)
    change = _edit_change(inputs)
    if change is not None:
        return _action("write", name, writes=(FileChange(path, change),) if path else ())
    body = _str(inputs, "content", "file_text", "contents", "new_source")
    if body is not None and path:
        what = "cell edited" if "new_source" in inputs else f"written ({_lines(body)})"
        return _action("write", name, writes=(FileChange(path, what),))
    if command_text(inputs) is not None:
        return None
    low = name.lower()
    many = inputs.get("paths")
    paths = tuple(p for p in many if isinstance(p, str)) if isinstance(many, list) else ((path,) if path else ())
    if any(w in low for w in _SEARCH_WORDS):
        return _action("search", name)
    if any(w in low for w in _WRITE_WORDS) and paths:
        return _action("write", name, writes=tuple(FileChange(p, "created" if "create" in low else "changed") for p in paths))
    # Read tools, and tools we do not know that name a file: most tools that take a path look at it.
    return _action("read", name, reads=paths) if paths else _action("run", name)


def tool_action(block: ToolUseBlock) -> ToolAction:
    """What ``block`` reads, writes or runs. Never raises, whatever its input holds."""
    inputs = block.input if isinstance(block.input, dict) else {}
    patch = _patch_text(block.name, inputs)
    if patch is not None:
        writes = patch_changes(patch)
        return _action("write" if writes else "run", block.name, writes=writes)
    found = _structured(block.name, inputs)
    if found is not None:
        return found
    script = command_text(inputs)
    return shell_action(script or "", block.name)


# -- shell --------------------------------------------------------------------------

# "<<EOF", "<< 'EOF'", "<<-\"EOF\"", "<<\EOF", but not the here-string "<<<".
_HEREDOC = re.compile(r"(?<!<)<<(?!<)(-?)[ \t]*(?:'([^'\n]+)'|\"([^\"\n]+)\"|\\?([A-Za-z_][\w.-]*))")
_MARK = "__lab_heredoc_{}__"
_MARK_RE = re.compile(r"__lab_heredoc_(\d+)__")
_OUT = frozenset((">", ">>", ">|", "&>", "&>>", ">&"))
_REDIRECTS = _OUT | {"<", "<<", "<<<", "<>", "<&"}
_NOT_FILES = ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty")
_WRAPPERS = frozenset(("sudo", "env", "time", "nohup", "command", "exec", "nice", "stdbuf", "xargs", "builtin"))
_NEUTRAL = frozenset(("cd", "pushd", "popd", "export", "set", "unset", "true", "false", ":", "echo", "printf", "pwd", "sleep", "clear", "source", ".", "alias", "which", "type"))
_READERS = frozenset(("cat", "head", "tail", "less", "more", "nl", "bat", "batcat", "tac", "wc", "xxd", "od", "hexdump", "strings", "diff", "cmp", "md5sum", "sha1sum", "sha256sum", "file", "stat"))
_SEARCHERS = frozenset(("grep", "egrep", "fgrep", "rg", "ag", "ack", "find", "fd", "ls", "tree", "locate", "du"))
# Options that take the next word as their value, per command family.
_VALUE_OPTIONS = {
    "head": {"-n", "-c", "--lines", "--bytes"},
    "tail": {"-n", "-c", "--lines", "--bytes", "-s"},
    "nl": {"-b", "-d", "-f", "-h", "-i", "-l", "-n", "-s", "-v", "-w"},
    "grep": {"-e", "-f", "-A", "-B", "-C", "-m", "-d", "-D", "--max-count", "--context", "--include", "--exclude", "--regexp", "--file"},
    "rg": {"-e", "-f", "-g", "-t", "-T", "-A", "-B", "-C", "-m", "-M", "-j", "--type", "--glob", "--max-count", "--regexp", "--file"},
    "sed": {"-e", "-f", "--expression", "--file", "-l"},
    "tee": set(),
    "cp": {"-t", "--target-directory", "-S", "--suffix"},
    "mv": {"-t", "--target-directory", "-S", "--suffix"},
    "patch": {"-p", "-i", "-o", "-d", "-F", "-r", "-B", "-D", "-V", "-z"},
    "git": {"-C", "-c", "--git-dir", "--work-tree"},
}
for _alias, _family in (("egrep", "grep"), ("fgrep", "grep"), ("ag", "rg"), ("ack", "rg")):
    _VALUE_OPTIONS[_alias] = _VALUE_OPTIONS[_family]
_SED_SUBST = re.compile(r"^(?P<addr>\d+(?:,\d+)?|\$)?s(?P<d>[^\w\s\\])(?P<old>(?:\\.|(?!(?P=d)).)*)(?P=d)(?P<new>(?:\\.|(?!(?P=d)).)*)(?P=d)[gIip0-9]*$", re.S)
_WINDOWS_DRIVE = re.compile(r"(?<![\w])[A-Za-z]:\\")


@dataclass
class _Segment:
    words: list[str]
    redirects: list[tuple[str, str]]
    body: str | None = None  # stdin: a heredoc, or what the previous command of a pipe printed
    piped_from: str | None = None  # what the previous command of a pipe was, as a short description


def _take_heredocs(script: str) -> tuple[str, list[str]]:
    """The script with heredoc bodies taken out (each operator replaced by a marker word), and the bodies."""
    if "<<" not in script:
        return script, []
    lines = script.split("\n")
    kept: list[str] = []
    bodies: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        found = list(_HEREDOC.finditer(line))
        if not found:
            kept.append(line)
            continue
        for m in reversed(found):
            line = line[: m.start()] + "< " + _MARK.format(len(bodies) + found.index(m)) + line[m.end() :]
        kept.append(line)
        for m in found:
            dash, delimiter = m.group(1), m.group(2) or m.group(3) or m.group(4)
            body: list[str] = []
            while i < len(lines):
                text = lines[i]
                i += 1
                if (text.lstrip("\t") if dash else text).rstrip() == delimiter:
                    break
                body.append(text)
            bodies.append("\n".join(body))
    return "\n".join(kept), bodies


def _words(script: str) -> list[str]:
    posix = _WINDOWS_DRIVE.search(script) is None
    # An unquoted newline ends a command like ';' does; shlex would take it for a space.
    lexer = shlex.shlex(script.replace("\n", ";\n"), posix=posix, punctuation_chars=True)
    lexer.whitespace_split = True
    out: list[str] = []
    try:
        for word in lexer:
            out.append(word if posix else _unquote(word))
    except ValueError:
        pass  # an unclosed quote: keep the words read so far
    return out


def _unquote(word: str) -> str:
    return word[1:-1] if len(word) >= 2 and word[0] == word[-1] and word[0] in "'\"" else word


def _is_operator(word: str) -> bool:
    return bool(word) and all(ch in "();<>|&" for ch in word)


def _segments(script: str) -> Iterator[_Segment]:
    text, bodies = _take_heredocs(script)
    words = _words(text)
    fd_redirects = re.search(r"(?<![\w-])\d+[<>]", text) is not None
    current = _Segment([], [])
    i = 0
    while i < len(words):
        word = words[i]
        nxt = words[i + 1] if i + 1 < len(words) else None
        if word in _REDIRECTS:
            if fd_redirects and current.words and current.words[-1].isdigit():
                current.words.pop()  # "2>&1", "2>/dev/null": the digit is a descriptor, not an argument
            if nxt is not None and not _is_operator(nxt):
                mark = _MARK_RE.fullmatch(nxt) if word == "<" else None
                if mark is not None and int(mark.group(1)) < len(bodies):
                    current.body = bodies[int(mark.group(1))]
                else:
                    current.redirects.append((word, nxt))
                i += 2
                continue
            i += 1
            continue
        if _is_operator(word):
            # A separator, or operators run together (")&&"): either way the command ends here.
            if current.words or current.redirects:
                yield current
            piped = word.endswith(("|", "|&")) and not word.endswith("||")
            previous = current
            current = _Segment([], [])
            if piped and previous.words:
                name = posixpath.basename(previous.words[0])
                current.body = previous.body if name == "cat" and len(previous.words) == 1 else None
                current.piped_from = _excerpt(" ".join(previous.words), 40)
                if name in ("echo", "printf"):
                    current.piped_from = f'"{_excerpt(" ".join(previous.words[1:]), 40)}"'
        else:
            current.words.append(word)
        i += 1
    if current.words or current.redirects:
        yield current


def _unwrap(words: list[str]) -> list[str]:
    """The command without leading ``VAR=x`` assignments and wrappers such as ``sudo``, ``env`` or ``timeout 10``."""
    i = 0
    while i < len(words):
        word = words[i]
        name = posixpath.basename(word)
        if re.match(r"^[A-Za-z_]\w*=", word):
            i += 1
        elif name in _WRAPPERS:
            i += 1
            while i < len(words) and words[i].startswith("-"):
                i += 1
        elif name == "timeout":
            i += 1
            while i < len(words) and (words[i].startswith("-") or re.match(r"^\d", words[i])):
                i += 1
        else:
            break
    return words[i:]


def _operands(name: str, args: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """Positional arguments, and options with their values (``("-e", "s/a/b/")``)."""
    values = _VALUE_OPTIONS.get(name, set())
    positional: list[str] = []
    options: list[tuple[str, str]] = []
    i = 0
    ended = False
    while i < len(args):
        word = args[i]
        if ended or not word.startswith("-") or word == "-":
            positional.append(word)
        elif word == "--":
            ended = True
        elif word in values and i + 1 < len(args):
            options.append((word, args[i + 1]))
            i += 1
        elif "=" in word and word.startswith("--"):
            key, _, value = word.partition("=")
            options.append((key, value))
        else:
            options.append((word, ""))
        i += 1
    return positional, options


@dataclass
class _Effect:
    kind: ActionKind | None = None  # None: a neutral command such as cd or echo
    reads: tuple[str, ...] = ()
    writes: tuple[FileChange, ...] = ()


def _in_place(flag: str) -> bool:
    # GNU "-i", "-i.bak", "--in-place=.bak"; a cluster such as "-ni" or "-Ei".
    if flag.startswith("--"):
        return flag.startswith("--in-place")
    return flag.startswith("-i") or ("i" in flag and set(flag[1:]) <= set("nErsuzi"))


def _sed(args: list[str]) -> _Effect:
    positional, options = _operands("sed", args)
    in_place = any(_in_place(k) for k, _ in options)
    if in_place and positional and positional[0] == "":
        positional.pop(0)  # BSD sed: -i '' takes an empty suffix
    scripts = [v for k, v in options if k in ("-e", "--expression")]
    if not scripts and not any(k in ("-f", "--file") for k, _ in options) and positional:
        scripts = [positional.pop(0)]
    files = [p for p in positional if p]
    if not in_place:
        return _Effect("read" if files else None, reads=tuple(files))
    script = scripts[0] if scripts else ""
    m = _SED_SUBST.match(script.strip())
    if m is not None:
        what = replacement(m.group("old"), m.group("new"))
        what = f"line {m.group('addr')}: {what}" if m.group("addr") else what
    else:
        what = f"sed -i '{_excerpt(script, 80)}'"
    return _Effect("write", writes=tuple(FileChange(f, what) for f in files))


def _grep(name: str, args: list[str]) -> _Effect:
    positional, options = _operands(name if name in _VALUE_OPTIONS else "grep", args)
    if not any(k in ("-e", "-f", "--regexp", "--file") for k, _ in options) and positional:
        positional.pop(0)  # the pattern
    flags = "".join(k[1:] for k, _ in options if k.startswith("-") and not k.startswith("--"))
    recursive = name in ("rg", "ag", "ack") or "r" in flags or "R" in flags or any(k == "--recursive" for k, _ in options)
    # A recursive search names directories; only what looks like a file was read.
    files = [p for p in positional if not recursive or ("." in posixpath.basename(p).lstrip(".") and not p.endswith("/"))]
    return _Effect("search", reads=tuple(files))


def _copy_move(name: str, args: list[str]) -> _Effect:
    positional, options = _operands(name, args)
    target = next((v for k, v in options if k in ("-t", "--target-directory")), None)
    if target is None:
        if len(positional) < 2:
            return _Effect("write")
        target = positional.pop()
    sources = positional
    if len(sources) == 1 or target is not None and not target.endswith("/"):
        dests = [(s, target) for s in sources]
    else:
        dests = [(s, posixpath.join(target, posixpath.basename(s))) for s in sources]
    if name == "cp":
        return _Effect("write", reads=tuple(sources), writes=tuple(FileChange(d, f"copied from {s}") for s, d in dests))
    writes = [FileChange(s, f"moved to {d}") for s, d in dests] + [FileChange(d, f"moved from {s}") for s, d in dests]
    return _Effect("write", writes=tuple(writes))


def _git(args: list[str], body: str | None) -> _Effect:
    positional, _ = _operands("git", args)
    if not positional:
        return _Effect("run")
    sub, rest = positional[0], args[args.index(positional[0]) + 1 :]
    files, _ = _operands("git", rest)
    if sub == "apply":
        changes = patch_changes(body) if body else ()
        return _Effect("write", reads=tuple(files), writes=changes)
    if sub in ("checkout", "restore") and ("--" in rest or sub == "restore"):
        after = rest[rest.index("--") + 1 :] if "--" in rest else files
        return _Effect("write", writes=tuple(FileChange(f, "restored from git") for f in after))
    if sub == "rm":
        return _Effect("write", writes=tuple(FileChange(f, "deleted (git rm)") for f in files))
    if sub == "mv" and len(files) == 2:
        return _copy_move("mv", files)
    return _Effect("run")


def _redirected(segment: _Segment, name: str, args: list[str]) -> str:
    """What a ``>`` or ``>>`` of this command puts in the file, in a few words."""
    if segment.body is not None and name in ("cat", "tee", ""):
        return f"{_lines(segment.body)} from a heredoc"
    if name in ("echo", "printf"):
        return f'"{_excerpt(" ".join(a for a in args if not a.startswith("-")))}"'
    if name == "cat" and not args and segment.piped_from:
        return f"output of {segment.piped_from}"
    if name == "":
        return "nothing (emptied)"
    return f"output of {_excerpt(' '.join([name, *args]), 40)}"


def _tee(segment: _Segment, args: list[str]) -> _Effect:
    positional, options = _operands("tee", args)
    source = f"{_lines(segment.body)} from a heredoc" if segment.body is not None else f"output of {segment.piped_from}" if segment.piped_from else "stdin"
    verb = "appended" if any(k in ("-a", "--append") for k, _ in options) else "written"
    return _Effect("write", writes=tuple(FileChange(p, f"{verb}: {source}") for p in positional))


def _patch(name: str, args: list[str], body: str | None) -> _Effect:
    positional, options = _operands("patch", args)
    text = body if body is not None else (positional[0] if name == "apply_patch" and positional else None)
    changes = patch_changes(text) if text else ()
    if not changes and name == "patch" and positional:
        changes = (FileChange(positional[0], "patched"),)
    reads = tuple(v for k, v in options if k == "-i")
    return _Effect("write", reads=reads, writes=changes)


def _command(segment: _Segment, name: str, args: list[str], depth: int) -> _Effect:
    """What the command itself does, by its name; its redirections are added by ``_effect``."""
    if name in ("bash", "sh", "zsh") and len(args) >= 2 and args[-2] in ("-c", "-lc", "-ec") and depth < 3:
        inner = _shell(args[-1], depth + 1)
        return _Effect(inner.kind, inner.reads, inner.writes)
    if name == "sed":
        return _sed(args)
    if name in ("grep", "egrep", "fgrep", "rg", "ag", "ack"):
        return _grep(name, args)
    if name in _READERS:
        # Without a file it filters its input ("| head"): the pipe's other commands say what it does.
        positional, _ = _operands(name, args)
        return _Effect("read" if positional or segment.body is not None else None, reads=tuple(positional))
    if name in _SEARCHERS:
        return _Effect("search")
    if name == "tee":
        return _tee(segment, args)
    if name in ("cp", "mv"):
        return _copy_move(name, args)
    if name in ("rm", "rmdir", "unlink"):
        positional, _ = _operands(name, args)
        return _Effect("write", writes=tuple(FileChange(p, "deleted") for p in positional))
    if name == "touch":
        positional, _ = _operands(name, args)
        return _Effect("write", writes=tuple(FileChange(p, "touched (created if missing)") for p in positional))
    if name == "git":
        return _git(args, segment.body)
    if name in ("patch", "apply_patch"):
        return _patch(name, args, segment.body)
    if name in ("perl", "awk", "gawk") and any(a.startswith("-") and not a.startswith("--") and "i" in a for a in args):
        # perl -pi -e SCRIPT FILES, awk -i inplace PROGRAM FILES: the first operand is the program.
        positional, _ = _operands(name, [a for a in args if a not in ("-e", "-E")])
        files = [p for p in positional if p != "inplace"][1:]
        return _Effect("write", writes=tuple(FileChange(f, f"edited in place by {name}") for f in files))
    if name in _NEUTRAL or not name:
        return _Effect(None)
    return _Effect("run")


def _effect(segment: _Segment, depth: int) -> _Effect:
    """The command's own effect plus what its ``<`` and ``>`` redirections read and write."""
    words = _unwrap(segment.words)
    name = posixpath.basename(words[0]) if words else ""
    args = words[1:]
    effect = _command(segment, name, args, depth)
    read_list, write_list = list(effect.reads), list(effect.writes)
    kind = effect.kind
    for op, target in segment.redirects:
        if target in _NOT_FILES or target.isdigit() or target.startswith("&") or target.startswith("-"):
            continue
        if op == "<":
            read_list.append(target)
            kind = kind or "read"
        elif op in _OUT:
            verb = "appended" if op in (">>", "&>>") else "written"
            write_list.append(FileChange(target, f"{verb}: {_redirected(segment, name, args)}"))
            kind = "write"
    return _Effect(kind, tuple(read_list), tuple(write_list))


def _clean(path: str, cwd: str | None) -> str | None:
    # Words with expansions or globs are not one known file.
    if not path or any(ch in path for ch in "$`*?{}") or path.startswith("-"):
        return None
    return path if is_windows_path(path) else resolve(path, cwd)


_RANK: dict[ActionKind | None, int] = {None: 0, "search": 1, "read": 2, "run": 3, "write": 4}


def _shell(script: str, depth: int) -> _Effect:
    cwd, _, _ = shell_cwd(script, None)
    kind: ActionKind | None = None
    reads: dict[str, None] = {}
    writes: list[FileChange] = []
    for segment in _segments(script):
        effect = _effect(segment, depth)
        if _RANK[effect.kind] > _RANK[kind]:
            kind = effect.kind
        for p in effect.reads:
            if (key := _clean(p, cwd)) is not None:
                reads[key] = None
        for w in effect.writes:
            if (key := _clean(w.path, cwd)) is not None:
                writes.append(FileChange(key, w.what))
    return _Effect(kind, tuple(reads), tuple(writes))


# As small as shell_paths' memos, for the same reason (a command is asked again soon or never).
@lru_cache(maxsize=COMMAND_MEMO)
def shell_action(script: str, tool: str = "bash") -> ToolAction:
    """What a shell script reads, writes or runs. A script of only ``cd``, ``echo`` and the like is a ``run``."""
    effect = _shell(script, 0)
    written = {w.path for w in effect.writes}
    reads = tuple(p for p in effect.reads if p not in written)
    return _action(effect.kind or "run", tool, reads=reads, writes=effect.writes, command=script)


# -- outcomes -----------------------------------------------------------------------

_RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
_EXIT = re.compile(r"(?i)\b(?:exit(?:ed)?(?: with)?|return(?:ed)?(?: with)?) (?:code|status)[:=]?\s*(-?\d+)")
_TRACEBACK = "Traceback (most recent call last):"
_ERROR_LINE = re.compile(
    r"^\s*(?:"
    r"(?-i:E\s{2,}\S.*)"  # pytest's "E   AssertionError: ..."
    r"|(?:FAILED|ERROR)\b.*"
    r"|[A-Za-z_][\w.]*(?:Error|Exception)(?::.*)?$"
    r"|(?:error|fatal|panic)(?:\[\w+\])?:.*"
    r"|\S+:\d+(?::\d+)?:\s*(?:fatal )?error\b.*"
    r"|npm ERR!.*"
    r"|.*(?:command not found|No such file or directory|Permission denied|No module named \S+)\s*$"
    r")",
    re.I | re.M,
)
# Output wrappers that say nothing about the error itself.
_WRAPPER_LINE = re.compile(r"^\s*(?:</?returncode>.*|</?output>|exit code:?\s*-?\d+.*|wall time:.*|output:)\s*$", re.I)
# Only the ends of a long output are searched for an exit code: the middle is the program's own text.
_ENDS = 400


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a tool call ended: ``error`` is the line that says what went wrong, when one does."""

    ok: bool
    exit_code: int | None = None
    error: str | None = None

    @property
    def label(self) -> str:
        status = "ok" if self.ok else f"exit {self.exit_code}" if self.exit_code not in (None, 0) else "error"
        return f"{status}: {self.error}" if self.error and not self.ok else status


def _exit_code(content: str) -> int | None:
    m = _RETURNCODE.search(content[:_ENDS]) or _RETURNCODE.search(content[-_ENDS:])
    if m is None:
        m = _EXIT.search(content[:_ENDS]) or _EXIT.search(content[-_ENDS:])
    return int(m.group(1)) if m is not None else None


def _traceback_error(content: str) -> str | None:
    at = content.rfind(_TRACEBACK)
    if at < 0:
        return None
    for line in content[at + len(_TRACEBACK) :].splitlines()[1:]:
        if line.strip() and not line[0].isspace():
            return line.strip()
    return None


def _first_line(content: str) -> str | None:
    for line in content.splitlines():
        if line.strip() and not _WRAPPER_LINE.match(line):
            return line.strip()
    return None


def result_outcome(content: str, is_error: bool = False, action: ToolAction | None = None) -> Outcome:
    """How a call ended, from its result. Error lines in the output count only for commands that run something:
    a file that was read or searched may well contain the word "error"."""
    code = _exit_code(content)
    # grep and its kin exit 1 when nothing matched: an answer, not a failure.
    no_match = code == 1 and action is not None and action.kind == "search"
    failed = is_error or (code is not None and code != 0 and not no_match)
    line: str | None = None
    if failed or action is None or action.kind in ("run", "write"):
        line = _traceback_error(content)
        if line is None:
            found = [m.group(0).strip() for m in _ERROR_LINE.finditer(content)]
            line = found[-1] if found else None
    if line is not None:
        failed = True
    elif failed:
        line = _first_line(content)
    return Outcome(ok=not failed, exit_code=code, error=line)
