"""Mentions: the file paths, identifiers, errors, URLs, commands and ids a piece of text names.

Two sides, one tokenizer, so that what a response names can be looked up in
what came before it:

    mentions(text)          the mentions a response names, classified and
                            filtered (noise out: prose words, options, small
                            numbers, short tokens, stopwords)
    tool_mentions(block)    the same for a tool call's input: paths from path
                            keys, shell commands split into programs and
                            arguments (``cat a/b.py``, ``sed -n 1,20p x.py``,
                            ``grep -rn foo src/``, ``pytest t.py::test_y``),
                            edit strings and patches
    tokens(text)            every token a text holds, unfiltered: the set a
                            mention is looked up in ("verbatim" is token-level
                            membership: ``AutoFieldMeta`` is in
                            ``class AutoFieldMeta(type):``, not in
                            ``AutoFieldMetaclass``)
    Lookup(wanted).held(t)  ``wanted & tokens(t)``, without building the token
                            set: what a replay asks of every message

A token is a run of word characters joined by ``.``, ``/``, ``-``, ``~``,
``@`` or ``+`` that starts and ends with a word character (or ``~``); a
token joined by ``.`` or ``/`` also yields its parts, so
``AutoFieldMeta.__subclasscheck__`` holds ``AutoFieldMeta``. Absolute paths
lose their leading ``/`` on both sides alike. Multi-word mentions are looked
up whole: error lines (``ValueError: bad value``, ``error: ...`` and
``FAILED ...`` lines, a traceback's last line) found the same way in both
texts, URLs, and commands (a tool call's command, whitespace collapsed).

``kind(m)`` says what a mention is, from its text alone. Everything here is
a pure function of its input: the same text always gives the same set.
"""

from __future__ import annotations

import re
import shlex
import string
from itertools import filterfalse, repeat
from collections.abc import Iterable, Mapping, Sequence

import ahocorasick

from ..core.messages import ToolUseBlock

__all__ = [
    "KINDS",
    "PATH_KEYS",
    "COMMAND_KEYS",
    "tokens",
    "tokens_of",
    "mentions_of",
    "Lookup",
    "mentions",
    "tool_mentions",
    "classify",
    "shell_mentions",
    "command_text",
    "error_lines",
    "error_line",
    "exit_code",
    "urls",
    "kind",
    "is_multiword",
    "clear_cache",
    "MAX_CACHED",
]

KINDS = ("path", "identifier", "error", "url", "command", "id", "number")
# Input keys whose value is a file path (the rule-based summarizer reads the same ones).
PATH_KEYS = ("file_path", "path", "filename", "file", "notebook_path", "target_file", "absolute_path")
COMMAND_KEYS = ("command", "cmd")
# Longer commands and error lines are cut here, on both sides alike.
MAX_LINE = 200
_MIN_CHARS = 4

_TOKEN = re.compile(r"[\w~](?:[\w.~@+/-]*[\w~])?")
_DIFF_PATH = re.compile(r"^(?:\+\+\+|---) [ab]/(\S+)|^diff --git a/(\S+) b/(\S+)", re.M)
_URL = re.compile(r"https?://[^\s<>\"'`)\]}]+")
_ERROR = re.compile(
    r"^[ \t>|]*((?:[A-Za-z_][\w.]*)?(?:Error|Exception|Warning|Failure|Interrupt|Exit)(?::[^\n]*|[ \t]*$)"
    r"|(?:error|fatal|ERROR|FATAL|FAILED|Fatal)\b[:\s][^\n]*)",
    re.M,
)
# A text can hold an error line only if it holds one of these (upper-case ERROR and FATAL lines included).
_ERROR_HINTS = ("rror", "RROR", "xception", "arning", "FAIL", "atal", "ATAL", "ailure", "nterrupt", "Exit")
_EXIT = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>|exit code[:\s]+(-?\d+)|exited with (?:code |status )?(-?\d+)", re.I)
_EXTENSIONS = frozenset(
    "py pyi pyx ipynb js jsx mjs cjs ts tsx json jsonl yaml yml toml md rst txt cfg ini conf env go rs c h cc cpp cxx hpp "
    "java kt kts scala rb php sh bash zsh fish ps1 sql html htm css scss less xml csv tsv log lock mod sum proto graphql "
    "swift m mm lua pl pm r jl dart vue svelte tf hcl gradle cmake mk bzl pony ex exs erl hs ml elm clj nim zig sol "
    "patch diff dockerfile tpl j2 jinja vim el".split()
)
_HEX = re.compile(r"(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_STOPWORDS = frozenset(
    "e.g i.e etc vs todo fixme note and/or input/output read/write true/false yes/no on/off client/server "
    "http https www localhost null none true false self this that in_progress not_started".split()
)
# Programs whose non-option arguments are files or folders, in ``cat Makefile`` as in ``cat a/b.py``.
_FILE_PROGRAMS = frozenset(
    "cat head tail less more nl wc sed awk grep egrep fgrep rg ag ls find tree cd touch rm cp mv mkdir rmdir chmod "
    "stat file diff vim vi nano emacs code open python python3 node ruby bash sh source pytest black ruff mypy flake8 "
    "pylint isort tar unzip".split()
)
_PATTERN_FIRST = frozenset("grep egrep fgrep rg ag sed awk".split())
# Options whose value is a module, a pattern or code, never a file.
_TAKES_VALUE = frozenset("-m -c -e -name -iname -path -ipath -regex -type -k".split())
_SEGMENT = re.compile(r"\s*(?:&&|\|\||[;|&\n])\s*")
_PLAIN_WORDS = re.compile(r"[^'\"\\#\s]*(?:[ \t\r\n]+[^'\"\\#\s]*)*")


# Small memos of pure functions, shared by every replay in the process, each started over at MAX_CACHED
# entries: which tokens are worth naming (a token recurs in many texts, and its regex costs more than a set
# lookup), and what a shell command names (retention reads the same commands; shlex is pure Python). Texts
# themselves are never memoized: a replay tokenizes each once (``recall.py``), so nothing large is kept alive.
MAX_CACHED = 200_000
_NAMED: set[str] = set()
_NOISE: set[str] = set()
# command -> (what it names, its unfiltered tokens): a second caller wanting the tokens too pays nothing.
_SHELL: dict[str, tuple[frozenset[str], frozenset[str]]] = {}


def clear_cache() -> None:
    """Forget the memos (the bench measures a cold replay this way)."""
    _NAMED.clear()
    _NOISE.clear()
    _SHELL.clear()


def tokens(text: str) -> set[str]:
    """Every token of ``text`` (see the module docstring), the set mentions are looked up in."""
    return tokens_of([text])


# The tokenizer at C speed. Every ASCII character that cannot be in a token becomes a space (one
# str.translate), so each whitespace-separated run holds exactly one token: the run stripped of the joins it
# starts or ends with (a token starts and ends with a word character or ``~``). A text with non-ASCII
# characters is translated as UTF-8 (str.translate is slow outside ASCII) with its bytes >= 0x80 left in
# place; ``\w`` is Unicode-aware, so the few runs holding them go through ``_TOKEN`` itself. Either way the
# result is exactly the set ``_TOKEN.findall`` gives, without a Python step per token.
_TOKEN_CHARS = frozenset(string.ascii_letters + string.digits + "_~.@+/-")
_EDGES = ".@+/-"
_SEPARATE = str.maketrans({chr(c): " " for c in range(128) if chr(c) not in _TOKEN_CHARS})
# Below this length one regex call costs less than the calls of the translated path.
_SHORT = 64
# A run of token characters (``_TOKEN`` matches its stripped core), and its rest from any point on.
_RUN = re.compile(r"[\w.~@+/-]+")
_RUN_REST = re.compile(r"[\w.~@+/-]*")
_SEPARATE_UTF8 = bytes(c if c >= 0x80 or chr(c) in _TOKEN_CHARS else 0x20 for c in range(256))


def _words(text: str) -> tuple[set[str], set[str]]:
    """(the tokens of ``text``, the parts of its tokens); the empty string may be among them."""
    if len(text) < _SHORT:
        whole = set(_TOKEN.findall(text))
    elif text.isascii():
        whole = set(map(str.strip, set(text.translate(_SEPARATE).split()), repeat(_EDGES)))
    else:
        runs = set(map(bytes.decode, set(text.encode().translate(_SEPARATE_UTF8).split())))
        whole = set(map(str.strip, filter(str.isascii, runs), repeat(_EDGES)))
        whole.update(_TOKEN.findall("\n".join(filterfalse(str.isascii, runs))))
    if "." not in text and "/" not in text:
        return whole, set()
    # Every token split at its joins (one per line, the joins made spaces): a token without joins gives
    # itself, already in ``whole``. Cheaper than picking the joined ones out, a Python step per token.
    return whole, set("\n".join(whole).replace(".", " ").replace("/", " ").split())


def _extras(text: str, lines: bool, links: bool) -> list[str]:
    """What a text holds beside its tokens: the paths of a diff's headers, and (when asked) its URLs and error lines."""
    out: list[str] = []
    if "+++ " in text or "diff --git" in text:
        for groups in _DIFF_PATH.findall(text):
            for g in groups:
                if g:
                    out += _TOKEN.findall(g)
    if links and "://" in text:
        out += urls(text)
    if lines and _has_error_hint(text):
        out += error_lines(text)
    return out


def _has_error_hint(text: str) -> bool:
    # _ERROR_HINTS spelled out: a generator costs more than the searches on the short strings of tool inputs.
    return ("rror" in text or "RROR" in text or "xception" in text or "arning" in text or "FAIL" in text or "atal" in text
            or "ATAL" in text or "ailure" in text or "nterrupt" in text or "Exit" in text)


class Lookup:
    """A fixed set of wanted strings, and which of them a text holds: ``held(text) == wanted & tokens(text)``.

    Why not tokenize: a transcript's responses name a few hundred strings, while its texts hold millions of
    characters. One Aho-Corasick pass (pyahocorasick, in C) finds where a wanted string occurs at all, and only
    those places are checked: the run of token characters around an occurrence, stripped as the tokenizer
    strips it, must be the string or hold it as a part. That is the tokenizer's own rule applied to one run,
    so the answer is exactly the token set's. A wanted string that is not one run of token characters can
    never be a token and is left out. The text's URLs and error lines are only looked for when some wanted
    string could be one.
    """

    __slots__ = ("wanted", "_single", "_lines", "_links", "_automaton")

    def __init__(self, wanted: Iterable[str]) -> None:
        self.wanted = frozenset(wanted)
        self._single = frozenset(w for w in self.wanted if _RUN.fullmatch(w))
        self._links = any("://" in w for w in self.wanted)
        # Every error line matches _ERROR from its start (error_lines keeps only lines with a space).
        self._lines = any(" " in w and _ERROR.match(w) for w in self.wanted)
        self._automaton: ahocorasick.Automaton | None = None
        if self._single:
            automaton = ahocorasick.Automaton()
            for w in self._single:
                automaton.add_word(w, w)
            automaton.make_automaton()
            self._automaton = automaton

    def held(self, text: str) -> set[str]:
        found: set[str] = set()
        if self._automaton is not None:
            reverse: str | None = None
            size = len(text)
            for end, w in self._automaton.iter(text):
                if w in found:
                    continue
                start = end + 1 - len(w)
                stop = _RUN_REST.match(text, end + 1).end()  # type: ignore[union-attr]
                begin = start
                if start and _RUN_REST.match(text, start - 1, start).end() == start:  # type: ignore[union-attr]
                    # The run starts further left: found by matching the reversed text, in C.
                    if reverse is None:
                        reverse = text[::-1]
                    begin = size - _RUN_REST.match(reverse, size - start).end()  # type: ignore[union-attr]
                token = text[begin:stop].strip(_EDGES)
                if token == w or (("." in token or "/" in token) and w in token.replace(".", " ").replace("/", " ").split()):
                    found.add(w)
        extras = _extras(text, self._lines, self._links)
        if extras:
            found.update(self.wanted.intersection(extras))
        return found


def urls(text: str) -> list[str]:
    return [u.rstrip(".,;:!?") for u in _URL.findall(text)]


def error_lines(text: str) -> list[str]:
    """Lines that report an error: ``XError: ...`` (a traceback's last line), ``error: ...``, ``FAILED ...``."""
    out: list[str] = []
    for line in _ERROR.findall(text):
        line = line.strip()[:MAX_LINE].rstrip()
        # "Error" alone, or a prose sentence that merely starts with the word, names nothing.
        if len(line) >= 8 and " " in line and (":" in line or line.startswith("FAILED")):
            out.append(line)
    return out


def error_line(text: str) -> str | None:
    """The line a person would quote for a failed result: its last error line, else its last non-empty line."""
    found = error_lines(text)
    if found:
        return found[-1]
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line and not _is_wrapper(line):
            return line[:MAX_LINE]
    return None


def _is_wrapper(line: str) -> bool:
    return line in ("<output>", "</output>") or line.startswith("<returncode>")


def exit_code(text: str) -> int | None:
    """A shell result's exit code when its text reports one (``<returncode>1</returncode>``, "exit code 1")."""
    match = _EXIT.search(text[:300]) or (_EXIT.search(text[-300:]) if len(text) > 300 else None)
    if match is None:
        return None
    return int(next(g for g in match.groups() if g is not None))


def command_text(command: str) -> str:
    """A command as one comparable line: its first line, whitespace collapsed, cut at ``MAX_LINE``."""
    first = command.strip().split("\n", 1)[0]
    return " ".join(first.split())[:MAX_LINE]


def is_multiword(mention: str) -> bool:
    return " " in mention or "://" in mention


_EXT_ALT = "|".join(sorted(_EXTENSIONS, key=lambda e: (-len(e), e)))
_PATH_RE = (
    rf"[\w~@+/.-]*[\w~-]\.(?i:{_EXT_ALT})"  # a file name with a known extension
    r"|[^/]*/[^/]*/.*"  # two or more slashes
    # One slash between two plain words is prose ("client/server") more often than a folder.
    r"|(?=[^/]*/[^/]*$).*[._~\d-].*"
)
_IDENT_RE = (
    r"(?=.{5})[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+"  # dotted: pkg.mod.func
    r"|(?=.{4})(?=[\w]*[A-Za-z])_*[A-Za-z0-9]+(?:_+[A-Za-z0-9]+)+_*"  # snake_case, CONSTANT_CASE, _private
    r"|_[A-Za-z][A-Za-z0-9_]{2,}"  # _private
    r"|__\w+__"  # dunder
    r"|(?=.{4})[A-Za-z][A-Za-z0-9]*(?:[a-z][A-Z]|[A-Z]{2}[a-z])[A-Za-z0-9]*"  # CamelCase, camelCase
)
_NUMBER_RE = r"\d{5,}"
_ID_RE = rf"{_UUID.pattern}|{_HEX.pattern}"
# One C-level fullmatch per token decides whether it is worth naming; kind() asks the parts again. Prose
# words (``the``, ``Let``) and small numbers, most tokens of a text, match no part: they fail at the start.
_MENTION = re.compile(rf"(?![A-Z]?[a-z]*\Z|\d{{1,4}}\Z)(?=.{{3,{MAX_LINE}}}\Z)(?:{_PATH_RE}|{_IDENT_RE}|{_NUMBER_RE}|{_ID_RE})", re.S)
_IS_PATH = re.compile(_PATH_RE, re.S)
_IS_IDENT = re.compile(_IDENT_RE)
_IS_NUMBER = re.compile(_NUMBER_RE)
_IS_ID = re.compile(_ID_RE)


def classify(found: Iterable[str]) -> set[str]:
    """The tokens worth naming: multi-word mentions, paths, identifiers, ids and long numbers, stopwords out."""
    found = found if isinstance(found, (set, frozenset)) else set(found)
    new = found.difference(_NAMED, _NOISE)
    if new:
        if len(_NAMED) + len(_NOISE) + len(new) > MAX_CACHED:
            _NAMED.clear()
            _NOISE.clear()
            new = set(found)
        named = set(filter(_MENTION.fullmatch, new))
        named.update(t for t in new if " " in t or "://" in t)
        named -= _STOPWORDS
        _NAMED.update(named)
        _NOISE.update(new.difference(named))
    return _NAMED.intersection(found)


def mentions(text: str) -> set[str]:
    """The mentions of a response's text: classified tokens, error lines and URLs; noise left out."""
    return classify(tokens(text))


def shell_mentions(command: str, raw: set[str] | None = None) -> set[str]:
    """What a shell command names: the command, its paths (also bare ``Makefile`` after ``cat``) and symbols.

    ``raw``, when given, also receives the command's unfiltered tokens.
    """
    hit = _SHELL.get(command)
    if hit is None:
        toks = tokens(command)
        found = classify(toks)
        line = command_text(command)
        if len(line) >= _MIN_CHARS:
            found.add(line)
        # Only the command line itself: a heredoc's body is text, already tokenized above.
        for segment in _SEGMENT.split(command.split("<<", 1)[0]):
            found.update(_shell_args(segment))
        if len(_SHELL) >= MAX_CACHED:
            _SHELL.clear()
        hit = _SHELL[command] = (frozenset(found), frozenset(toks))
    if raw is not None:
        raw |= hit[1]
    return set(hit[0])


def _program(segment: str) -> str:
    """The program a segment runs, read without shlex: its first word that is not a variable assignment."""
    for word in segment.split():
        if "=" not in word or word.startswith("-"):
            return word.strip("'\"").rsplit("/", 1)[-1]
    return ""


def _shell_args(segment: str) -> Iterable[str]:
    # shlex is pure Python and most segments run no file program: look before paying for it.
    if _program(segment) not in _FILE_PROGRAMS:
        return
    if _PLAIN_WORDS.fullmatch(segment):
        # No quotes, escapes, comments or whitespace shlex does not split on: its words are str.split's.
        words = segment.split()
    else:
        try:
            words = shlex.split(segment, comments=True)
        except ValueError:
            words = segment.split()
    words = [w for w in words if "=" not in w or w.startswith("-")]
    if not words or words[0].rsplit("/", 1)[-1] not in _FILE_PROGRAMS:
        return
    pattern_pending = words[0].rsplit("/", 1)[-1] in _PATTERN_FIRST
    skip_next = False
    for w in words[1:]:
        if skip_next:
            skip_next = False
            continue
        if w in _TAKES_VALUE:
            skip_next = True
            continue
        # Options and their numeric values are not files.
        if w.startswith("-") or w.isdigit():
            continue
        if pattern_pending:
            # grep's, sed's and awk's first operand is a pattern or a script, not a file.
            pattern_pending = False
            continue
        # Nor are globs and quoted phrases.
        if any(c in w for c in " *?[]{}$`'\"<>"):
            continue
        for t in _TOKEN.findall(w.split("::", 1)[0]):
            if len(t) >= 3 and not t.isdigit() and t.lower() not in _STOPWORDS and not _is_sed_script(t):
                yield t


def _is_sed_script(token: str) -> bool:
    # "1,20p" tokenizes to "20p"; a sed address or a short flag word is not a file.
    return token[:-1].isdigit() or token in ("s", "p", "d")


def tool_mentions(block: ToolUseBlock, raw: set[str] | None = None) -> set[str]:
    """What a tool call's input names: path keys as paths, commands as shell, other strings as text.

    ``raw``, when given, also receives every unfiltered token of the input's strings.
    """
    return mentions_of((), (block,), raw if raw is not None else set())


def mentions_of(texts: Sequence[str], calls: Iterable[ToolUseBlock], raw: set[str]) -> set[str]:
    """What a response names in ``texts`` (each as ``mentions`` reads it) and ``calls`` (each as
    ``tool_mentions`` reads it) together. ``raw`` receives every unfiltered token.

    All plain strings go through one tokenizer call and one classification: a response holds many short
    strings, and a call per string (or per block) costs more than its tokens do. Tokens never span the
    newline that joins them; the extras are looked for per string.
    """
    found: set[str] = set()
    strings = list(texts)
    for call in calls:
        _input_mentions(call.input, None, found, raw, strings)
    if strings:
        toks = tokens_of(strings)
        raw |= toks
        found |= classify(toks)
    return found


def tokens_of(texts: list[str]) -> set[str]:
    """Every token of ``texts`` (``tokens`` of each, united): tokens never span the newline that joins them."""
    found, parts = _words("\n".join(texts))
    found |= parts
    for text in texts:
        found.update(_extras(text, True, True))
    found.discard("")
    return found


def _input_mentions(value: object, key: str | None, found: set[str], raw: set[str], texts: list[str]) -> None:
    if isinstance(value, str):
        if key in COMMAND_KEYS:
            found |= shell_mentions(value, raw)
            return
        texts.append(value)
        if key in PATH_KEYS:
            found.update(t for t in _TOKEN.findall(value) if len(t) >= 3)
    elif isinstance(value, dict):
        for k, v in value.items():
            _input_mentions(v, str(k), found, raw, texts)
    elif isinstance(value, (bool, int, float)) or value is None:
        # Flags and counts (replace_all, limit, timeout) name nothing; asked first, as the ABC check is slow.
        return
    elif isinstance(value, (list, tuple)):
        if key in COMMAND_KEYS and value and all(isinstance(v, str) for v in value):
            found |= shell_mentions(shlex.join(value), raw)
            return
        for v in value:
            _input_mentions(v, key, found, raw, texts)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            _input_mentions(v, str(k), found, raw, texts)


def kind(mention: str) -> str:
    """What a mention is, from its text: one of ``KINDS``."""
    if "://" in mention:
        return "url"
    if " " in mention:
        return "error" if _ERROR.match(mention) else "command"
    if _IS_NUMBER.fullmatch(mention):
        return "number"
    if _IS_ID.fullmatch(mention):
        return "id"
    if _IS_PATH.fullmatch(mention) or "/" in mention:
        return "path"
    if _IS_IDENT.fullmatch(mention):
        return "identifier"
    # A bare argument of a file-reading command (``cat Makefile``).
    return "path"
