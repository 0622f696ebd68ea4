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
    mentions_of_each(rs)    ``mentions_of`` of many responses at once, each
                            response tokenized once (its texts, its calls'
                            strings and commands together), the tokens of all
                            of them classified in one call
    names_and_held(read)    what a transcript's index (``recall.History``) asks
                            of its responses: what each names, and what it
                            holds of what any names, read a batch at a time
    call_texts(calls)       a call's strings and what it names beside their
                            tokens (path keys, ``shell_parts``), so that what
                            a call holds can be looked up rather than read

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

Speed, where a first replay spends it: a transcript's index tokenizes every
response and looks up its few hundred wanted strings in every other text.
Texts read together are joined (``JOIN``) so that one pass finds what one pass
per text would; classification is one C-level regex match per distinct token
of a batch of responses, cheapest alternatives first; error lines are looked for only
at the lines that hold a hint (``str.find``, not a regex scan of the text);
``Lookup`` matches over a text's shadow, where a token or a part always lies
between spaces, and settles most occurrences by their two neighbours. The
tokenizer and those checks also exist in C (``_scan.c``, built at install
when a compiler is there), the same rules without a Python step per token or
per match.
"""

from __future__ import annotations

import re
import shlex
import string
from bisect import bisect_left
from itertools import filterfalse, repeat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Generic, TypeVar

import ahocorasick

from ..core.messages import ToolUseBlock
from ..core.names_index import TOKEN

__all__ = [
    "KINDS",
    "PATH_KEYS",
    "COMMAND_KEYS",
    "tokens",
    "tokens_of",
    "mentions_of",
    "mentions_of_each",
    "names_and_held",
    "BATCH",
    "call_texts",
    "JOIN",
    "Lookup",
    "mentions",
    "tool_mentions",
    "classify",
    "shell_mentions",
    "shell_parts",
    "command_text",
    "error_lines",
    "error_line",
    "exit_code",
    "urls",
    "kind",
    "is_multiword",
    "clear_cache",
    "release_command_memos",
    "MAX_CACHED",
    "KEPT",
]

KINDS = ("path", "identifier", "error", "url", "command", "id", "number")
# Input keys whose value is a file path (the rule-based summarizer reads the same ones).
PATH_KEYS = ("file_path", "path", "filename", "file", "notebook_path", "target_file", "absolute_path")
COMMAND_KEYS = ("command", "cmd")
# Longer commands and error lines are cut here, on both sides alike.
MAX_LINE = 200
_MIN_CHARS = 4

_TOKEN = TOKEN  # the names index's rule (lab.core.names_index): what recall looks for is what a stub lists
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


# Small memos of pure functions, shared by every replay in the process: which tokens are worth naming (a
# token recurs in many texts, and its regex costs more than a set lookup), and what a shell command names
# (retention reads the same commands; shlex is pure Python). The token and command memos keep what was asked
# last: two generations of at most ``KEPT`` entries, a new one started when the newest is full, the older
# dropped then, and an entry found in the older copied to the newest. A session repeats a few commands and
# many words close together (``git status``, a test run), which the last generations hold; kept for every
# command and token of a long session, they held more than the transcript's own index does, during its
# build. Texts themselves are never memoized: a replay tokenizes each once (``recall.py``).
KEPT = 1_024
# The small memos kept whole up to here, then started over: a command's shell arguments, a mention's kind.
MAX_CACHED = 200_000

V = TypeVar("V")


class _Recent(Generic[V]):
    """A dict memo holding the entries put or found last: two generations of at most ``KEPT`` entries."""

    __slots__ = ("new", "old")

    def __init__(self) -> None:
        self.new: dict[str, V] = {}
        self.old: dict[str, V] = {}

    def get(self, key: str) -> V | None:
        hit = self.new.get(key)
        if hit is None:
            hit = self.old.get(key)
            if hit is not None:
                self.put(key, hit)
        return hit

    def put(self, key: str, value: V) -> None:
        if len(self.new) >= KEPT:
            self.old, self.new = self.new, {}
        self.new[key] = value

    def clear(self) -> None:
        self.new, self.old = {}, {}

    def __len__(self) -> int:
        return len(self.new) + len(self.old)


class _Worth:
    """Which tokens are worth naming (``classify``), as two generations of (named, noise) sets."""

    __slots__ = ("named", "noise", "old_named", "old_noise")

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.named: set[str] = set()
        self.noise: set[str] = set()
        self.old_named: set[str] = set()
        self.old_noise: set[str] = set()

    def __len__(self) -> int:
        return len(self.named) + len(self.noise) + len(self.old_named) + len(self.old_noise)


_WORTH = _Worth()
# command -> what it names (``shell_mentions``): retention asks it of every command line, and sessions repeat
# some (``git status``) close together.
_SHELL: _Recent[tuple[str, ...]] = _Recent()
# A command's line before any heredoc -> its programs' file arguments (shlex's share of the cost): retention
# asks ``shell_mentions`` of the line, recall's index reads every command's parts after it, a whole session
# later. So this one is kept to ``MAX_CACHED`` entries, as it is small: keyed by the command itself (no copy)
# when it holds no heredoc, valued by a tuple, the empty one (the commonest) shared.
_ARGS: dict[str, tuple[str, ...]] = {}
_KIND: dict[str, str] = {}


def clear_cache() -> None:
    """Forget the memos (the bench measures a cold replay this way)."""
    release_command_memos()
    _KIND.clear()


def release_command_memos() -> None:
    """Forget what each shell command names (``_SHELL``, ``_ARGS``), which tokens are worth naming
    (``_WORTH``), and the kinds asked so far (``_KIND``).

    They serve the two readers of a transcript's commands and tokens, retention's targets and recall's
    index, which a replay builds first and shares with every later replay of the transcript; past that,
    no request reads them again (a message a stage writes is looked up token by token). The next
    transcript's build classifies its tokens afresh (a regex match per distinct token). Results never change.
    The kinds are started over too: retention's targets asked them of their own copies of the mentions, which
    the memo's keys would keep for the whole replay beside recall's equal strings; a replay's rows then ask
    the kinds of recall's own (its lost mentions), each computed once again.
    """
    _SHELL.clear()
    _ARGS.clear()
    _WORTH.clear()
    _KIND.clear()


def tokens(text: str) -> set[str]:
    """Every token of ``text`` (see the module docstring), the set mentions are looked up in."""
    return tokens_of([text])


# Texts read together are joined by a blank line, so that one pass over the whole finds exactly what one
# pass per text would: tokens, URLs and diff headers never span a line break, and an error line spans one
# only after a bare ``error``/``FAILED`` word ending its line, where the blank line leaves that word alone
# (too short to be an error line) instead of gluing the next text's first line to it. (A diff's headers
# count only in a text that holds a diff: ``_extras`` reads those per text.)
JOIN = "\n\n"


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

_token_set: Callable[[str], set[str]] | None
_settle: Callable[[str, Iterable[tuple[int, str | tuple[str, ...]]]], set[str]] | None
try:
    from ._scan import settle as _settle
    from ._scan import token_set as _token_set
except ImportError:  # installed without a C compiler: the Python rules below serve alone
    _token_set = _settle = None


def _words(text: str) -> tuple[set[str], str]:
    """(the tokens of ``text``, parts included, the empty string perhaps among them; a string that holds
    each of them, one per line, or the text itself).

    The rule in C (``_scan.token_set``, built with the package where a compiler is found) when it is there:
    a recall index tokenizes every response of a transcript, and this is most of what that costs. The same
    rule in Python (``_words_py``) otherwise; the tests hold the two to the same set on any text.
    """
    if _token_set is not None and len(text) >= _SHORT:
        return _token_set(text), text
    return _words_py(text)


def _words_py(text: str) -> tuple[set[str], str]:
    """``_words`` in Python: the fallback without the C module, and the reference the tests compare it with."""
    if len(text) < _SHORT:
        whole = set(_TOKEN.findall(text))
    elif text.isascii():
        whole = set(map(str.strip, set(text.translate(_SEPARATE).split()), repeat(_EDGES)))
    else:
        runs = set(map(bytes.decode, set(text.encode().translate(_SEPARATE_UTF8).split())))
        whole = set(map(str.strip, filter(str.isascii, runs), repeat(_EDGES)))
        whole.update(_TOKEN.findall("\n".join(filterfalse(str.isascii, runs))))
    if "." not in text and "/" not in text:
        return whole, text
    # Every token split at its joins (one per line, the joins made spaces): a token without joins gives
    # itself, already in ``whole``. Cheaper than picking the joined ones out, a Python step per token.
    joined = "\n".join(whole)
    whole.update(joined.replace(".", " ").replace("/", " ").split())
    return whole, joined


def _extras(text: str, lines: bool, links: bool, words: str | None = None, parts: Sequence[str] | None = None) -> list[str]:
    """What a text holds beside its tokens: the paths of a diff's headers, and (when asked) its URLs and error lines.

    ``words``, a string holding every token of the text, stands in for it where only a word is looked for:
    an error line's words hold one of the hints, which are letters, so each lies inside a token. ``parts``
    are the texts ``text`` joins (``JOIN``): a diff's headers count only in a text that holds a diff, which
    a header line of another text must not borrow, so they are then read per part.
    """
    out: list[str] = []
    if "+++ " in text or "diff --git" in text:
        for part in parts if parts is not None else (text,):
            if "+++ " in part or "diff --git" in part:
                for groups in _DIFF_PATH.findall(part):
                    for g in groups:
                        if g:
                            out += _TOKEN.findall(g)
    if links and "://" in text:
        out += urls(text)
    if lines and _has_error_hint(words if words is not None else text):
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

    The pass runs over the text's shadow (``_shadow``: one character for one, every character but an ASCII
    letter, digit, ``_`` or ``~`` a space) looking for each string's shadow between two spaces. A token or
    a part always lies between characters the shadow makes spaces (a separator, a join, a non-ASCII
    character, the text's ends), so no occurrence that counts is missed, and occurrences inside a longer
    word never come up. The automaton then starts every match at one node, the space, instead of at a
    root with a child per first letter, which it would look through at every character. Most occurrences
    are then settled by their two neighbours alone: a string that starts and ends with a word character
    (or ``~``), between characters that cannot be in a token, is a whole run and so a token; one without
    ``.`` or ``/`` is also a part between those joins; a join glued to a word character beyond it makes
    the occurrence part of a longer piece. Only the rest walk out to the run's ends.
    """

    __slots__ = ("names", "_lines", "_links", "_automaton", "_bare", "_how")

    def __init__(self, wanted: Iterable[str]) -> None:
        # The wanted strings sorted, looked up by bisection (``has``): a transcript's index keeps its Lookup as long
        # as the transcript is replayed, and a set of its tens of thousands of strings cost a hash table of 16
        # bytes a slot beside a tuple's 8 a string. Membership is asked only of a text's few extras (URLs, error
        # lines, a diff's paths) and of what a call names beside its tokens.
        self.names: tuple[str, ...] = tuple(sorted(set(wanted)))
        # The strings that are one run of token characters (all a token can be): the automaton's; not kept, as
        # only the Python checks ask for them again.
        single = list(filter(_RUN.fullmatch, self.names))
        # Joined by line breaks, which no "://" can straddle.
        self._links = "://" in "\n".join(self.names)
        # Every error line matches _ERROR from its start (error_lines keeps only lines with a space).
        self._lines = any(" " in w and _ERROR.match(w) for w in self.names)
        self._automaton: ahocorasick.Automaton | None = None
        # Strings whose shadow is all spaces (non-ASCII digits, say) would match at every run of spaces:
        # those few are searched for in the text itself.
        self._bare: ahocorasick.Automaton | None = None
        keys: dict[str, list[str]] = {}
        # How each string's occurrences are settled: (ends, glued) of ``_neighbours``, and whether the
        # string is its own shadow (a match is then the string itself). Only the Python checks ask for it
        # (the C module works it out from the string), so it is filled on their first use.
        self._how: dict[str, tuple[frozenset[str], frozenset[str], bool]] | None = None
        bare: list[str] = []
        # One shadow for all of them: the strings never hold a line break, which the shadow keeps.
        shadows = _shadow_lines("\n".join(single)).split("\n") if single else []
        for w, shadow in zip(single, shadows, strict=True):
            if shadow.isspace():
                bare.append(w)
            else:
                keys.setdefault(f" {shadow} ", []).append(w)
        if keys:
            automaton = ahocorasick.Automaton()
            # A node looks its children up one by one, in the order they were added, and most of the pass is
            # spent at the node after a space. So a second space comes first there (the path of a key that
            # can never match, \x01 being no shadow's), then the likeliest first letters of a word.
            automaton.add_word("  \x01", None)
            for key in sorted(keys, key=lambda k: (_FIRST_LETTERS.find(k[1]) % 99, k)):
                # Different strings can share a shadow (a.b and a-b): a tuple of them, each checked.
                found = keys[key]
                automaton.add_word(key, found[0] if len(found) == 1 else tuple(found))
            automaton.make_automaton()
            self._automaton = automaton
        if bare:
            automaton = ahocorasick.Automaton()
            for w in bare:
                automaton.add_word(w, w)
            automaton.make_automaton()
            self._bare = automaton

    def held(self, text: str) -> set[str]:
        if _settle is not None:
            # The same checks of each match in C (_scan.settle): a Python step per match is what a lookup costs
            # beside the automaton's own pass.
            found = _settle(text, self._automaton.iter(f" {_shadow(text)} ")) if self._automaton is not None else set()
            return self._rest(text, found, None)
        return self._held_py(text)

    def _held_py(self, text: str) -> set[str]:
        """``held`` in Python: the fallback without the C module, and the reference the tests compare it with."""
        found: set[str] = set()
        size = len(text)
        settle = _Run(text)
        if self._automaton is not None:
            how = self._how
            if how is None:
                single = list(filter(_RUN.fullmatch, self.names))
                shadows = _shadow_lines("\n".join(single)).split("\n") if single else []
                how = self._how = {w: (*_neighbours(w), shadow == w) for w, shadow in zip(single, shadows, strict=True) if not shadow.isspace()}
            # The shadow is padded with a space at each end, so a match ending at ``end`` (its closing
            # space) holds the string at text[end - 1 - len(w) : end - 1].
            for end, w in self._automaton.iter(f" {_shadow(text)} "):
                if w in found:
                    continue
                if w.__class__ is tuple:
                    for one in w:
                        if one not in found and settle.at(one, *how[one], end - 1):
                            found.add(one)
                    continue
                ends, glued, plain = how[w]
                # The commonest case inline: the string itself, between two separators.
                stop = end - 1
                start = stop - len(w)
                if (plain or text.startswith(w, start)) and (
                    ((text[start - 1] if start else " ") in ends and (text[stop] if stop < size else " ") in ends)
                    or settle.at(w, ends, glued, True, stop)
                ):
                    found.add(w)
        return self._rest(text, found, settle)

    def _rest(self, text: str, found: set[str], settle: _Run | None) -> set[str]:
        """What the shadow pass cannot find: strings with no shadow, URLs and error lines."""
        if self._bare is not None:
            settle = settle or _Run(text)
            for end, w in self._bare.iter(text):
                if w not in found and settle.holds(w, end + 1 - len(w), end + 1):
                    found.add(w)
        extras = _extras(text, self._lines, self._links)
        if extras:
            found.update(filter(self.has, extras))
        return found

    @property
    def wanted(self) -> frozenset[str]:
        """The wanted strings as a set, built when asked (the tests ask; a replay asks ``has``)."""
        return frozenset(self.names)

    def has(self, x: str) -> bool:
        """Whether ``x`` is one of the wanted strings."""
        names = self.names
        at = bisect_left(names, x)
        return at < len(names) and names[at] == x

    def among(self, strings: Iterable[str]) -> set[str]:
        """The wanted strings among ``strings``: ``wanted & set(strings)``."""
        return set(filter(self.has, strings))


class _Run:
    """The tokenizer's rule applied to the one run of token characters around an occurrence in ``text``."""

    __slots__ = ("text", "size", "_reverse")

    def __init__(self, text: str) -> None:
        self.text = text
        self.size = len(text)
        self._reverse: str | None = None

    def at(self, w: str, ends: frozenset[str], glued: frozenset[str], plain: bool, stop: int) -> bool:
        """Whether the occurrence of ``w``'s shadow ending at ``stop`` is ``w``, and a token or a part (see ``Lookup``)."""
        text = self.text
        start = stop - len(w)
        if not plain and not text.startswith(w, start):
            return False
        size = self.size
        # The text's own edges count as a space.
        left = text[start - 1] if start else " "
        right = text[stop] if stop < size else " "
        if left in ends and right in ends:
            return True
        if (left in glued and start > 1 and text[start - 2] in _WORD) or (right in glued and stop + 1 < size and text[stop + 1] in _WORD):
            # Glued to more of its run: never that run's token, nor one of its parts.
            return False
        return self.holds(w, start, stop)

    def holds(self, w: str, start: int, stop: int) -> bool:
        """Whether ``w``, found at ``text[start:stop]``, is the token of the run around it or one of its parts."""
        text = self.text
        stop = _RUN_REST.match(text, stop).end()  # type: ignore[union-attr]
        begin = start
        if start and _RUN_REST.match(text, start - 1, start).end() == start:  # type: ignore[union-attr]
            # The run starts further left: found by matching the reversed text, in C.
            if self._reverse is None:
                self._reverse = text[::-1]
            begin = self.size - _RUN_REST.match(self._reverse, self.size - start).end()  # type: ignore[union-attr]
        token = text[begin:stop].strip(_EDGES)
        return token == w or (("." in token or "/" in token) and w in token.replace(".", " ").replace("/", " ").split())


# ASCII characters that cannot be in a token (every other one can), and those with a part's joins; the
# ASCII token characters that are not joins.
_BREAKS = frozenset(chr(c) for c in range(128)) - _TOKEN_CHARS
_PART_BREAKS = _BREAKS | {".", "/"}
_WORD = _TOKEN_CHARS - set(_EDGES)
# A text's shadow: ASCII word characters kept, every other character a space, one for one (a non-ASCII
# character is first encoded as one "?").
_SHADOW = bytes(c if chr(c) in _WORD else 0x20 for c in range(256))
_SHADOW_LINES = bytes(c if chr(c) in _WORD or c == 0x0A else 0x20 for c in range(256))
# Word-initial characters, commonest first (English and code); one missing sorts last.
_FIRST_LETTERS = "stcpafdimrebhlnowugvk_1TSCDFPRAIMEBNLHOWGUVK0x2yjzq3456789XYZJQ~"


def _shadow(text: str) -> str:
    return text.encode("ascii", "replace").translate(_SHADOW).decode("ascii")


def _shadow_lines(text: str) -> str:
    """``_shadow`` with its line breaks kept."""
    return text.encode("ascii", "replace").translate(_SHADOW_LINES).decode("ascii")


def _neighbours(w: str) -> tuple[frozenset[str], frozenset[str]]:
    """How an occurrence of ``w`` is settled by its neighbours alone (see ``Lookup``): (the neighbours that make
    it a token or a part, the joins that glue it to more of its run when a word character lies beyond them)."""
    if "." in w or "/" in w:
        # Never a part: only the whole stripped run can be w.
        glued = frozenset(_EDGES)
        ends = _BREAKS
    else:
        glued = frozenset("-@+")
        ends = _PART_BREAKS
    if w[0] in _EDGES or w[-1] in _EDGES:
        # Stripped from a run's ends, or a part such as ``-b`` of ``a.-b``: only the whole run can tell.
        ends = frozenset()
    return ends, glued


def urls(text: str) -> list[str]:
    return [u.rstrip(".,;:!?") for u in _URL.findall(text)]


def error_lines(text: str) -> list[str]:
    """Lines that report an error: ``XError: ...`` (a traceback's last line), ``error: ...``, ``FAILED ...``."""
    out: list[str] = []
    for line in _error_matches(text):
        line = line.strip()[:MAX_LINE].rstrip()
        # "Error" alone, or a prose sentence that merely starts with the word, names nothing.
        if len(line) >= 8 and " " in line and (":" in line or line.startswith("FAILED")):
            out.append(line)
    return out


def _error_matches(text: str) -> list[str]:
    """``_ERROR.findall(text)``, the regex tried only at the starts of the lines that hold a hint.

    Every match starts a line holding one of ``_ERROR_HINTS`` (each of its words holds one), and ends at the
    end of a line, so trying those starts in order, past the end of the last match, finds the same matches
    as the regex's own scan, which tries every position; ``str.find`` finds the hints at a fraction of that.
    """
    starts: set[int] = set()
    for hint in _ERROR_HINTS:
        at = text.find(hint)
        while at >= 0:
            starts.add(text.rfind("\n", 0, at) + 1)
            # One per line is enough.
            at = text.find("\n", at)
            if at < 0:
                break
            at = text.find(hint, at)
    found: list[str] = []
    end = 0
    for start in sorted(starts):
        if start >= end:
            match = _ERROR.match(text, start)
            if match is not None:
                found.append(match.group(1))
                end = match.end()
    return found


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
    line = " ".join(first.split())[:MAX_LINE]
    # Most commands are one such line already: then the command itself, which its call holds anyway, rather
    # than a copy that a recall index would keep as long as the transcript.
    return command if line == command else line


def is_multiword(mention: str) -> bool:
    return " " in mention or "://" in mention


_EXT_ALT = "|".join(sorted(_EXTENSIONS, key=lambda e: (-len(e), e)))
_PATH_RE = (
    # A file name with a known extension. An extension holds no dot, so only the last dot can start one:
    # the lookahead spares the alternation's hundred tries at every other dot of a dotted name.
    rf"[\w~@+/.-]*[\w~-]\.(?=[^.]*\Z)(?i:{_EXT_ALT})"
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
# A fullmatch holds whichever part matches, so the parts are tried cheapest first, the extensions last.
_MENTION = re.compile(rf"(?![A-Z]?[a-z]*\Z|\d{{1,4}}\Z)(?=.{{3,{MAX_LINE}}}\Z)(?:{_IDENT_RE}|{_NUMBER_RE}|{_ID_RE}|{_PATH_RE})", re.S)
_IS_PATH = re.compile(_PATH_RE, re.S)
_IS_IDENT = re.compile(_IDENT_RE)
_IS_NUMBER = re.compile(_NUMBER_RE)
_IS_ID = re.compile(_ID_RE)


def classify(found: Iterable[str]) -> set[str]:
    """The tokens worth naming: multi-word mentions, paths, identifiers, ids and long numbers, stopwords out."""
    found = found if isinstance(found, (set, frozenset)) else set(found)
    memo = _WORTH
    new = found.difference(memo.named, memo.noise)
    if not new:
        return memo.named.intersection(found)
    # What the older generation knows is taken from it (and kept in the newest); the rest is matched.
    again = memo.old_named.intersection(new)
    fresh = new.difference(again, memo.old_noise)
    named = set(filter(_MENTION.fullmatch, fresh))
    named.update(t for t in fresh if " " in t or "://" in t)
    named -= _STOPWORDS
    named |= again
    out = memo.named.intersection(found)
    out |= named
    if len(memo.named) + len(memo.noise) + len(new) > KEPT:
        # A new generation, holding this call's tokens (however many: one call's are held during it anyway).
        memo.old_named, memo.old_noise = memo.named, memo.noise
        memo.named, memo.noise = set(out), set(found)
        memo.noise -= out
    else:
        memo.named |= named
        memo.noise |= new.difference(named)
    return out


def mentions(text: str) -> set[str]:
    """The mentions of a response's text: classified tokens, error lines and URLs; noise left out."""
    return classify(tokens(text))


def shell_mentions(command: str, raw: set[str] | None = None) -> set[str]:
    """What a shell command names: the command, its paths (also bare ``Makefile`` after ``cat``) and symbols.

    ``raw``, when given, also receives the command's unfiltered tokens.
    """
    hit = _SHELL.get(command)
    if hit is None or raw is not None:
        toks = tokens(command)
        if raw is not None:
            raw |= toks
        if hit is None:
            hit = tuple(classify(toks) | shell_parts(command))
            _SHELL.put(command, hit)
    return set(hit)


def shell_parts(command: str) -> set[str]:
    """What a shell command names beside its tokens: its line (``command_text``) and its programs' file arguments."""
    found: set[str] = set()
    line = command_text(command)
    if len(line) >= _MIN_CHARS:
        found.add(line)
    # Only the command line itself: a heredoc's body is text, its tokens the command's own.
    head = command.split("<<", 1)[0] if "<<" in command else command
    args = _ARGS.get(head)
    if args is None:
        args = tuple(dict.fromkeys(a for segment in _SEGMENT.split(head) for a in _shell_args(segment)))
        if len(_ARGS) >= MAX_CACHED:
            _ARGS.clear()
        _ARGS[head] = args
    found.update(args)
    return found


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
    ``tool_mentions`` reads it) together. ``raw`` receives every unfiltered token."""
    ((named, toks),) = mentions_of_each([(texts, calls)])
    raw |= toks
    return named


def mentions_of_each(responses: Iterable[tuple[Sequence[str], Iterable[ToolUseBlock]]]) -> list[tuple[set[str], set[str]]]:
    """``mentions_of`` of each response ``(texts, calls)``: (what it names, every token it holds).

    A response's strings, its commands among them, go through one tokenizer call (a response holds many short
    strings, and a call per string costs more than its tokens do), and the tokens of all the responses through
    one classification: classify is per token, so each response names exactly its own tokens worth naming, for
    one call instead of one per response. Every token of every response is held at once: a transcript's index
    reads its responses with ``names_and_held``.
    """
    read: list[tuple[set[str], set[str]]] = []
    for texts, calls in responses:
        strings, beside = call_texts(calls)
        strings[:0] = texts
        read.append((tokens_of(strings) if strings else set(), beside))
    named = classify(set().union(*(toks for toks, _ in read)))
    return [(named.intersection(toks).union(beside), toks) for toks, beside in read]


# Responses ``names_and_held`` tokenizes and classifies together: one classification per batch (a set
# operation and a regex match per distinct token of the batch, where one per response would cost a call
# each), and a batch's token sets are all it holds at once.
BATCH = 1_024
_NO_PARTS: frozenset[str] = frozenset()


def names_and_held(read: Callable[[], Iterable[tuple[Sequence[str], Iterable[ToolUseBlock]]]]) -> Iterator[tuple[set[str], set[str]]]:
    """For each response ``(texts, calls)`` that ``read()`` gives, in order: (what it names, as
    ``mentions_of_each`` says; what it holds of everything any of them names).

    That is ``mentions_of_each``'s ``(names, names | wanted & toks)``, ``wanted`` the union of every
    response's names, without holding every token of every response at once. Classification is per token,
    so a token another response names and this one holds is a token worth naming, which this one names
    too, unless another response names it only beside its tokens (a path key's token, a command line, a
    shell argument: ``call_texts``). So ``wanted & toks`` is ``names | beside & toks``, ``beside`` what
    every response names beside its tokens: read first (a walk of the calls; ``read`` is called twice), and
    then the responses tokenized and classified ``BATCH`` at a time, each left with its two sets.
    """
    # What each response names beside its tokens (a tuple: most hold one command line, or nothing).
    own: list[tuple[str, ...]] = []
    beside: set[str] = set()
    for _, calls in read():
        parts = call_texts(calls)[1] if calls else _NO_PARTS
        own.append(tuple(parts) if parts else ())
        beside |= parts
    at = 0
    batch: list[set[str]] = []
    for texts, calls in read():
        strings = list(texts)
        if calls:
            # The commands among the strings, read with them: ``tokens_of`` finds each string's own tokens.
            sink: set[str] = set()
            for call in calls:
                _input_texts(call.input, None, strings, strings, sink)
        batch.append(tokens_of(strings) if strings else set())
        if len(batch) == BATCH:
            yield from _named_batch(batch, own[at : at + BATCH], beside)
            at += BATCH
            batch = []
    yield from _named_batch(batch, own[at:], beside)


def _named_batch(batch: list[set[str]], parts: list[tuple[str, ...]], beside: set[str]) -> Iterator[tuple[set[str], set[str]]]:
    """``names_and_held``'s two sets for a batch of responses: their token sets, what each names beside them."""
    named = classify(set().union(*batch))
    for toks, own in zip(batch, parts, strict=True):
        names = named.intersection(toks)
        names.update(own)
        more = beside.intersection(toks)
        more -= names
        yield names, (names | more if more else names)


def call_texts(calls: Iterable[ToolUseBlock]) -> tuple[list[str], set[str]]:
    """(every string of the calls' inputs, commands included; what the calls name beside those strings' tokens).

    Beside its tokens a call names its path keys' tokens and what ``shell_parts`` reads in its commands, so
    the wanted strings a call holds are the wanted tokens of its strings and the wanted ones of ``beside``:
    found by looking them up, without tokenizing the call.
    """
    strings: list[str] = []
    commands: list[str] = []
    beside: set[str] = set()
    for call in calls:
        _input_texts(call.input, None, strings, commands, beside)
    for command in commands:
        beside |= shell_parts(command)
    return strings + commands, beside


def tokens_of(texts: Sequence[str]) -> set[str]:
    """Every token of ``texts`` (``tokens`` of each, united), read in one pass over the texts joined by ``JOIN``."""
    text = JOIN.join(texts)
    found, words = _words(text)
    found.update(_extras(text, True, True, words, texts))
    found.discard("")
    return found


def _input_texts(value: object, key: str | None, strings: list[str], commands: list[str], beside: set[str]) -> None:
    if isinstance(value, str):
        if key in COMMAND_KEYS:
            commands.append(value)
            return
        strings.append(value)
        if key in PATH_KEYS:
            beside.update(t for t in _TOKEN.findall(value) if len(t) >= 3)
    elif isinstance(value, dict):
        for k, v in value.items():
            # A string value, the commonest, is read here: a call less per string.
            if isinstance(v, str) and k not in COMMAND_KEYS and k not in PATH_KEYS and isinstance(k, str):
                strings.append(v)
            else:
                _input_texts(v, str(k), strings, commands, beside)
    elif isinstance(value, (bool, int, float)) or value is None:
        # Flags and counts (replace_all, limit, timeout) name nothing; asked first, as the ABC check is slow.
        return
    elif isinstance(value, (list, tuple)):
        if key in COMMAND_KEYS and value and all(isinstance(v, str) for v in value):
            commands.append(shlex.join(value))
            return
        for v in value:
            _input_texts(v, key, strings, commands, beside)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            _input_texts(v, str(k), strings, commands, beside)


def kind(mention: str) -> str:
    """What a mention is, from its text: one of ``KINDS``."""
    # Memoized: a replay's rows list the same lost mentions again and again.
    found = _KIND.get(mention)
    if found is None:
        if len(_KIND) >= MAX_CACHED:
            _KIND.clear()
        found = _KIND[mention] = _kind(mention)
    return found


def _kind(mention: str) -> str:
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
