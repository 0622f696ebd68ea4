"""Mention extraction: shell commands, tool inputs, diffs, tracebacks, noise, and its invariants."""

from __future__ import annotations

import re
import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core.messages import ToolUseBlock
from lab.replayer.mentions import (
    MAX_LINE,
    Lookup,
    call_texts,
    classify,
    clear_cache,
    command_text,
    error_line,
    error_lines,
    exit_code,
    kind,
    mentions,
    mentions_of,
    mentions_of_each,
    shell_mentions,
    tokens,
    tokens_of,
    tool_mentions,
    urls,
)
from lab.replayer.mentions import (
    _ERROR,
    _ERROR_HINTS,
    _EXT_ALT,
    _ID_RE,
    _IDENT_RE,
    _IS_PATH,
    _MENTION,
    _NUMBER_RE,
    _PLAIN_WORDS,
    _STOPWORDS,
    _error_matches,
)


def _bash(command: str) -> ToolUseBlock:
    return ToolUseBlock(id="call_00_x", name="bash", input={"command": command})


class TestShell:
    @pytest.mark.parametrize(
        ("command", "expected"),
        [
            ("cat a/b.py", {"a/b.py"}),
            ("sed -n 1,20p x.py", {"x.py"}),
            ("grep -rn foo_bar src/", {"src", "foo_bar"}),
            ("python -m pytest tests/test_x.py::test_y", {"tests/test_x.py", "test_y"}),
            ("cat Makefile && head -n 5 README", {"Makefile", "README"}),
            ("cd /testbed && python reproduce.py", {"testbed", "reproduce.py"}),
        ],
        ids=["cat", "sed", "grep", "pytest-node", "bare-files", "cd-and-run"],
    )
    def test_paths_and_symbols_inside_commands(self, command: str, expected: set[str]) -> None:
        found = shell_mentions(command)
        assert expected <= found
        assert command_text(command) in found

    def test_patterns_options_and_sed_scripts_are_not_files(self) -> None:
        found = shell_mentions('grep -n -A 20 "class AutoFieldMeta" django/db/models/fields/__init__.py')
        assert "django/db/models/fields/__init__.py" in found and "AutoFieldMeta" in found
        assert not {"class", "20", "-A", "-n"} & found
        assert not {"1,20p", "20p", "-n"} & shell_mentions("sed -n 1,20p x.py")
        assert "pytest" not in shell_mentions("python -m pytest -q")

    def test_a_heredoc_body_is_text_not_arguments(self) -> None:
        found = shell_mentions("cat > fix.py << 'EOF'\nfrom app.models import load_config\nEOF")
        assert "load_config" in found and "app.models" in found
        assert command_text("cat > fix.py << 'EOF'\nbody\nEOF") == "cat > fix.py << 'EOF'"

    def test_a_command_list_input(self) -> None:
        block = ToolUseBlock(id="c1", name="shell", input={"command": ["bash", "-lc", "cat src/app.py"]})
        assert "src/app.py" in tool_mentions(block)

    def test_a_command_that_does_not_parse_still_gives_mentions(self) -> None:
        assert "a/b.py" in shell_mentions('cat "a/b.py')


class TestToolInputs:
    def test_edit_input(self) -> None:
        block = ToolUseBlock(id="t1", name="Edit", input={"file_path": "/Users/me/p/src/a.ts", "old_string": "const fooBar = 1", "new_string": "const fooBar = max_retries"})
        found = tool_mentions(block)
        assert {"Users/me/p/src/a.ts", "fooBar", "max_retries"} <= found
        assert "const" not in found

    def test_a_path_key_names_a_file_whatever_its_shape(self) -> None:
        assert "Makefile" in tool_mentions(ToolUseBlock(id="t1", name="Read", input={"path": "Makefile"}))

    def test_a_diff_names_its_files_without_the_a_b_prefixes(self) -> None:
        patch = "diff --git a/src/x.py b/src/x.py\n--- a/src/x.py\n+++ b/src/x.py\n@@ -1 +1 @@\n-old_name\n+new_name\n"
        found = tool_mentions(ToolUseBlock(id="t1", name="apply_patch", input={"patch": patch}))
        assert {"src/x.py", "old_name", "new_name"} <= found


class TestText:
    def test_identifiers_paths_urls_ids(self) -> None:
        text = ("Look at `AutoFieldMeta.__subclasscheck__` in django/db/models/fields/__init__.py: self._subclasses "
                "and settings.DEFAULT_AUTO_FIELD, see https://docs.djangoproject.com/en/3.2/ref/. Commit a1b2c3d4e, run 123456.")
        found = mentions(text)
        assert {"AutoFieldMeta", "__subclasscheck__", "AutoFieldMeta.__subclasscheck__", "django/db/models/fields/__init__.py",
                "_subclasses", "DEFAULT_AUTO_FIELD", "settings.DEFAULT_AUTO_FIELD", "a1b2c3d4e", "123456"} <= found
        assert "https://docs.djangoproject.com/en/3.2/ref/" in found

    @pytest.mark.parametrize("noise", ["the", "and/or", "client/server", "2025", "42", "e.g", "Let", "file", "-rn", "in_progress"])
    def test_noise_is_left_out(self, noise: str) -> None:
        assert noise not in mentions(f"Let me check the {noise} here, e.g. now.")

    def test_kinds(self) -> None:
        assert [kind(m) for m in ("src/x.py", "models.py", "ValueError: bad value", "python reproduce.py", "a1b2c3d4e", "12345",
                                  "foo_bar", "AutoFieldMeta", "https://x.org/a")] == [
            "path", "path", "error", "command", "id", "number", "identifier", "identifier", "url"]

    def test_tokens_are_whole_words_not_substrings(self) -> None:
        held = tokens("class AutoFieldMetaclass(type): pass")
        assert "AutoFieldMetaclass" in held and "AutoFieldMeta" not in held


class TestErrors:
    TRACEBACK = ('Traceback (most recent call last):\n  File "x.py", line 3, in <module>\n    int("x")\n'
                 "ValueError: invalid literal for int() with base 10: 'x'\n")

    def test_a_traceback_gives_its_exception_line(self) -> None:
        assert error_lines(self.TRACEBACK) == ["ValueError: invalid literal for int() with base 10: 'x'"]
        assert error_line(self.TRACEBACK) == "ValueError: invalid literal for int() with base 10: 'x'"
        assert "ValueError: invalid literal for int() with base 10: 'x'" in tokens(self.TRACEBACK)

    def test_shell_outputs(self) -> None:
        out = "<returncode>1</returncode>\n<output>\nerror: pathspec 'x' did not match any file(s) known to git\n</output>"
        assert exit_code(out) == 1
        assert error_line(out) == "error: pathspec 'x' did not match any file(s) known to git"
        assert exit_code("<returncode>0</returncode>\n<output>\nok\n</output>") == 0
        assert exit_code("[Command finished with exit code 2]") == 2
        assert exit_code("all good") is None

    def test_a_failure_without_an_error_line_gives_its_last_line(self) -> None:
        assert error_line("<returncode>2</returncode>\n<output>\nsomething odd happened\n</output>") == "something odd happened"

    def test_upper_case_error_and_fatal_lines_are_tokens_too(self) -> None:
        from lab.replayer.mentions import _ERROR_HINTS, _has_error_hint

        out = "connecting...\nERROR: could not connect to server at db:5432\nFATAL: password authentication failed\n"
        assert {"ERROR: could not connect to server at db:5432", "FATAL: password authentication failed"} <= tokens(out)
        # The spelled-out test and the documented hints agree.
        assert all(_has_error_hint(f"x{h}x") for h in _ERROR_HINTS) and not _has_error_hint("all good")

    def test_prose_that_starts_with_error_is_not_an_error_line(self) -> None:
        assert error_lines("Error\nerrors are fine\n") == []


def _reference_tokens(text: str) -> set[str]:
    # The module docstring's definition, spelled as plainly as possible: the fast tokenizer must agree.
    found = set(re.findall(r"[\w~](?:[\w.~@+/-]*[\w~])?", text))
    for t in [t for t in found if "." in t or "/" in t]:
        found.update(re.split(r"[./]+", t))
    if "+++ " in text or "diff --git" in text:
        for groups in re.findall(r"^(?:\+\+\+|---) [ab]/(\S+)|^diff --git a/(\S+) b/(\S+)", text, re.M):
            found.update(t for g in groups if g for t in re.findall(r"[\w~](?:[\w.~@+/-]*[\w~])?", g))
    if "://" in text:
        found.update(urls(text))
    if any(h in text for h in _ERROR_HINTS):
        found.update(error_lines(text))
    found.discard("")
    return found


class TestTokenizer:
    def test_non_ascii_words_and_separators(self) -> None:
        text = "café.py → naïve_name — x/数据.json\u00a0tail\u3000end. ./run.sh (see ~/a-b/c)."
        assert tokens(text) == _reference_tokens(text)
        assert {"café.py", "café", "naïve_name", "x/数据.json", "数据", "tail", "end", "run.sh", "~/a-b/c", "a-b"} <= tokens(text)
        assert "→" not in tokens(text) and "—" not in tokens(text)

    def test_long_and_short_texts_take_the_same_tokens(self) -> None:
        line = "see AutoFieldMeta.__subclasscheck__ at django/db/x.py, then -foo- and a.-b ... 12 e.g. end."
        assert tokens(line) == _reference_tokens(line)
        assert tokens(" ".join([line] * 3)) == _reference_tokens(" ".join([line] * 3)) == tokens(line)

    def test_lookup_finds_the_wanted_tokens_a_text_holds(self) -> None:
        text = "Traceback:\nValueError: bad value\nsee https://x.org/a and AutoFieldMeta.__subclasscheck__ in a/b.py"
        wanted = {"AutoFieldMeta", "a/b.py", "ValueError: bad value", "https://x.org/a", "b.py", "missing_name", "x.org"}
        # "b.py" and "x.org" are substrings, not tokens or parts: a/b.py splits into a, b, py.
        assert Lookup(wanted).held(text) == wanted & tokens(text) == wanted - {"missing_name", "b.py", "x.org"}

    def test_a_plain_command_is_split_as_shlex_would(self) -> None:
        for segment in ("cat a/b.py", "grep -rn foo_bar src/", "sed -n 1,20p x.py\t y.py", "ls -la  ./x"):
            assert _PLAIN_WORDS.fullmatch(segment) and segment.split() == shlex.split(segment, comments=True)
        for segment in ("grep 'a b' x.py", 'cat "a b.py"', "cat a\\ b.py", "cat x.py # y.py", "cat a\u00a0b"):
            assert not _PLAIN_WORDS.fullmatch(segment)


def test_the_memos_start_over_at_their_limit_without_changing_an_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "AutoFieldMeta in django/db/x.py, then foo_bar and the rest"
    expected = mentions(text)
    monkeypatch.setattr("lab.replayer.mentions.MAX_CACHED", 3)
    monkeypatch.setattr("lab.replayer.mentions.KEPT", 3)
    assert mentions(text) == expected
    assert mentions("other_name and another_one") == {"other_name", "another_one"}
    assert mentions(text) == expected
    assert shell_mentions("cat a/b.py") == shell_mentions("cat a/b.py") >= {"a/b.py"}


def test_the_command_memos_hold_two_generations_and_answer_as_fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command and token memos keep what was asked last, two generations of ``KEPT`` entries (one call's
    tokens may make a generation larger), whatever the number of commands read; an entry found in the older one
    is kept. (The shell arguments' memo, small, turns over at ``MAX_CACHED``.)"""
    from lab.replayer import mentions as m

    commands = [f"cat src/mod{i}/a_{i}.py && grep -n name_{i % 7} notes/{i}.txt" for i in range(60)]
    clear_cache()
    fresh = [shell_mentions(c) for c in commands]
    most = max(len(tokens(c)) for c in commands)
    monkeypatch.setattr(m, "KEPT", 4)
    clear_cache()
    for _ in range(2):
        for c, expected in zip(commands, fresh, strict=True):
            assert shell_mentions(c) == expected
            assert len(m._SHELL) <= 8
            assert len(m._WORTH) <= 2 * max(4, most)
    # Asked again while in the older generation: copied to the newest, so it outlives the next turn over.
    clear_cache()
    for c in commands[:4]:
        shell_mentions(c)
    shell_mentions(commands[4])  # a new generation: commands[:4] are the older one
    shell_mentions(commands[0])
    for c in commands[5:8]:
        shell_mentions(c)  # the newest fills again (commands[4], commands[0], and two more) and turns over
    assert commands[0] in m._SHELL.new or commands[0] in m._SHELL.old
    assert commands[1] not in m._SHELL.new and commands[1] not in m._SHELL.old
    m.release_command_memos()
    assert len(m._SHELL) == len(m._ARGS) == len(m._WORTH) == 0


_any_piece = st.sampled_from(list("abcXY_Z019./-:~@+ \n\t`'\"(){}<>|&;$é数→—\u00a0\u3000\u2028")
                             + ["Error: x y", "+++ b/", "--- a/", "http://", "a.-b", "diff --git a/x b/y\n"])
# Up to 120 pieces: past the length where the tokenizer leaves its regex path for the translated one.
_any_text = st.lists(_any_piece, max_size=120).map("".join)


@settings(max_examples=200, deadline=None)
@given(_any_text, st.data())
def test_the_fast_tokenizer_matches_its_definition(text: str, data: st.DataObject) -> None:
    held = _reference_tokens(text)
    assert tokens(text) == held
    wanted = set(data.draw(st.lists(st.sampled_from(sorted(held) or ["none"]), max_size=8))) | {"never_there", "a b"}
    assert Lookup(wanted).held(text) == wanted & held


@settings(max_examples=200, deadline=None)
@given(_any_text, st.data())
def test_lookup_tells_a_token_from_a_substring_of_one(text: str, data: st.DataObject) -> None:
    # Lookup searches for the wanted strings and checks the run around each occurrence: substrings that are
    # not tokens or parts (a slice inside a longer run, one cut at a join) are exactly what it must refuse.
    held = _reference_tokens(text)
    slices = st.tuples(st.integers(0, len(text)), st.integers(1, 12)).map(lambda ab: text[ab[0]:ab[0] + ab[1]])
    wanted = set(data.draw(st.lists(slices, max_size=10))) | set(data.draw(st.lists(st.sampled_from(sorted(held) or ["none"]), max_size=4)))
    wanted.discard("")
    assert Lookup(wanted).held(text) == wanted & held


_piece = st.sampled_from(list("abcXY_Z019./-:~ \n\t`'\"(){}<>|&;$") + ["Error: ", "cat ", "+++ b/", "http://", "<<", "grep -n ", "foo_bar"])
_text = st.lists(_piece, max_size=60).map("".join)


@settings(max_examples=150, deadline=None)
@given(_text)
def test_extraction_never_raises_and_is_deterministic(text: str) -> None:
    first = (mentions(text), shell_mentions(text), tokens(text))
    clear_cache()
    again = (mentions(text), shell_mentions(text), tokens(text))
    assert first == again
    # What a response names can always be looked up in the same text's tokens (the shell's bare arguments aside).
    assert mentions(text) <= tokens(text)
    for m in first[1]:
        assert kind(m) in ("path", "identifier", "error", "url", "command", "id", "number")


# --- the fast paths equal what they stand in for ---------------------------------------------------

# The classifier as it was before its parts were reordered and the extension test confined to the last
# dot: the same language, so the same answer for every token.
_OLD_PATH = (
    rf"[\w~@+/.-]*[\w~-]\.(?i:{_EXT_ALT})"
    r"|[^/]*/[^/]*/.*"
    r"|(?=[^/]*/[^/]*$).*[._~\d-].*"
)
_OLD_MENTION = re.compile(rf"(?![A-Z]?[a-z]*\Z|\d{{1,4}}\Z)(?=.{{3,{MAX_LINE}}}\Z)(?:{_OLD_PATH}|{_IDENT_RE}|{_NUMBER_RE}|{_ID_RE})", re.S)
_token_piece = st.sampled_from(
    list("abfXYZ_019./-~@+: \nſKé١") + [".py", ".PY", ".Json", ".tsx", "src/", "a.b.c", "__init__", "deadbeef12", "12345",
                                      "CamelCase", "snake_case", "1.2.840", ".d.ts", "ſh", ".ſh", "e.g"]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_token_piece, max_size=12).map("".join))
def test_the_classifier_says_what_the_old_one_said(token: str) -> None:
    assert bool(_MENTION.fullmatch(token)) == bool(_OLD_MENTION.fullmatch(token))
    assert bool(_IS_PATH.fullmatch(token)) == bool(re.fullmatch(_OLD_PATH, token, re.S))
    clear_cache()
    assert classify({token}) == ({token} if (_OLD_MENTION.fullmatch(token) or " " in token or "://" in token) and token not in _STOPWORDS else set())


_line_piece = st.sampled_from(list("aE: \n\t>|_.") + ["Error", "error", "FAILED", "FAIL", "fatal", "ERROR", "Exit", "Warning", "ValueError: x y",
                                                       "rror", "xception", "Interrupt", "ailure", "ATAL", "\n\n", "  > "])


@settings(max_examples=400, deadline=None)
@given(st.lists(_line_piece, max_size=40).map("".join))
def test_error_lines_found_from_their_hints_are_the_regex_scans(text: str) -> None:
    assert _error_matches(text) == _ERROR.findall(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(_any_text, max_size=5), st.data())
def test_texts_read_together_hold_what_each_holds(texts: list[str], data: st.DataObject) -> None:
    # JOIN keeps an error word ending one text from taking the next text's first line, and a diff header
    # counts only beside its own text's diff.
    texts = [*data.draw(st.permutations([*texts, "FAILED", "tail words: here", "error", "x", "--- a/x.py", "a +++ b"]))]
    each = set().union(*(tokens(t) for t in texts))
    assert tokens_of(texts) == each
    assert "x.py" not in each and "FAILED\ntail words: here" not in each
    assert tokens_of(["+++ b/a.py\n--- a/x.py"]) >= {"a.py", "x.py"}


def test_strings_that_share_a_shadow_or_have_none_are_each_checked() -> None:
    text = "see a-b, not a.c; an id ١٢٣٤٥٦ and x.-b then q.r"
    wanted = {"a.b", "a-b", "a.c", "a-c", "١٢٣٤٥٦", "١٢٣٤٥", "-b", "q.r", "q-r"}
    assert Lookup(wanted).held(text) == wanted & tokens(text) == {"a-b", "a.c", "١٢٣٤٥٦", "-b", "q.r"}


_call = st.sampled_from([
    {"command": "cat a/b.py && grep -rn foo_bar src/"},
    {"command": "cat > fix.py << 'EOF'\nfrom app.models import load_config\nEOF"},
    {"command": ["python", "-m", "pytest", "tests/test_x.py::test_y"]},
    {"file_path": "/repo/src/app.py", "old_string": "def load_config():", "new_string": "def load_config(path):"},
    {"todos": [{"content": "Fix AutoFieldMeta.__subclasscheck__", "status": "pending"}], "limit": 3, "flag": True},
    {"cmd": "sed -n 1,20p x.py", "path": "lab/x.py"},
])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.lists(_any_text, max_size=2), st.lists(_call, max_size=3)), max_size=4), st.booleans())
def test_responses_read_together_name_what_each_names(responses: list[tuple[list[str], list[dict]]], warm: bool) -> None:
    clear_cache()
    if warm:
        # Commands already read by shell_mentions (as retention leaves them in the memos) read alike.
        shell_mentions("cat a/b.py && grep -rn foo_bar src/")
    read = [(texts, [ToolUseBlock(id=f"c{i}", name="t", input=inp) for i, inp in enumerate(calls)]) for texts, calls in responses]
    together = mentions_of_each(read)
    clear_cache()
    alone = []
    for texts, calls in read:
        raw: set[str] = set()
        alone.append((mentions_of(texts, calls, raw), raw))
    assert together == alone
    # And each is what reading every string of it on its own says.
    for (named, raw), (texts, calls) in zip(together, read, strict=True):
        held: set[str] = set().union(*(tokens(t) for t in texts))
        says = set().union(*(classify(tokens(t)) for t in texts))
        for call in calls:
            _read_alone(call.input, None, says, held)
        assert (named, raw) == (says, held)
    # What a call names beside its strings' tokens, and those strings, are what tool_mentions reads.
    for _, calls in read:
        strings, beside = call_texts(calls)
        raw = set()
        assert tool_mentions_all(calls, raw) == (classify(tokens_of(strings)) | beside if strings else beside)
        assert raw == (tokens_of(strings) if strings else set())


# Names a call gives beside its tokens that are no mention as a token (a plain word), and texts that say them.
_plain_call = st.sampled_from([{"command": "cat Makefile README"}, {"command": "make"}, {"file_path": "docs"}])
_plain_text = st.sampled_from(["run make, then see Makefile", "the docs and src", "README"])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.lists(_any_text | _plain_text, max_size=2), st.lists(_call | _plain_call, max_size=3)), max_size=7),
       st.integers(1, 4), st.integers(1, 6), st.booleans())
def test_responses_read_in_batches_name_and_hold_what_they_do_all_at_once(responses: list[tuple[list[str], list[dict]]], batch: int,
                                                                           kept: int, warm: bool) -> None:
    """``names_and_held`` says, batch after batch and with memos turning over, what ``mentions_of_each`` says of all
    the responses at once: each one's names, and those names with every name of any response it holds."""
    from lab.replayer import mentions as m

    read = [(texts, [ToolUseBlock(id=f"c{i}", name="t", input=inp) for i, inp in enumerate(calls)]) for texts, calls in responses]
    clear_cache()
    together = mentions_of_each(read)
    wanted = set().union(*(names for names, _ in together))
    expected = [(names, names | (wanted & toks)) for names, toks in together]
    clear_cache()
    if warm:
        shell_mentions("cat a/b.py && grep -rn foo_bar src/")
    calls = 0

    def again() -> list[tuple[list[str], list[ToolUseBlock]]]:
        nonlocal calls
        calls += 1
        return read

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(m, "BATCH", batch)
        mp.setattr(m, "KEPT", kept)
        got = list(m.names_and_held(again))
    assert got == expected and calls == 2  # read twice: what the calls name beside their tokens, then the batches


def test_a_name_given_beside_the_tokens_is_held_where_another_response_holds_it_as_a_token() -> None:
    # "Makefile" is no mention as a token (a plain word), but ``cat Makefile`` names it: the first response,
    # which only says the word, holds it; a later batch names it.
    from lab.replayer import mentions as m

    read = [(["edit the Makefile first"], []), ([], [_bash("ls")]), ([], [_bash("cat Makefile")])]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(m, "BATCH", 1)
        got = list(m.names_and_held(lambda: read))
    assert got[0] == (set(), {"Makefile"}) and "Makefile" in got[2][0]


def _read_alone(value: object, key: str | None, says: set[str], held: set[str]) -> None:
    # What a call's input names, string by string, spelled as plainly as possible.
    if isinstance(value, str):
        if key in ("command", "cmd"):
            says |= shell_mentions(value, held)
            return
        held |= tokens(value)
        says |= classify(tokens(value))
        if key in ("file_path", "path", "filename", "file", "notebook_path", "target_file", "absolute_path"):
            says |= {t for t in re.findall(r"[\w~](?:[\w.~@+/-]*[\w~])?", value) if len(t) >= 3}
    elif isinstance(value, dict):
        for k, v in value.items():
            _read_alone(v, str(k), says, held)
    elif isinstance(value, list):
        if key in ("command", "cmd") and value and all(isinstance(v, str) for v in value):
            says |= shell_mentions(shlex.join(value), held)
            return
        for v in value:
            _read_alone(v, key, says, held)


def tool_mentions_all(calls: list[ToolUseBlock], raw: set[str]) -> set[str]:
    return set().union(*(tool_mentions(c, raw) for c in calls))


# Characters where Unicode's word rule matters: letters and digits of other scripts, superscripts, Roman
# numerals, combining marks (not word characters), spaces that are not ASCII, emoji.
_unicode_text = st.lists(
    st.sampled_from(list("ab_Z09~.@+/- \n,:()é߀٣²Ⅳ中\u0301\u00a0\u2028😀—")) | st.characters(), max_size=200
).map("".join)


@settings(max_examples=300, deadline=None)
@given(_unicode_text)
def test_the_c_tokenizer_and_the_python_rule_give_one_set(text: str) -> None:
    from lab.replayer import mentions as m

    if m._token_set is None:
        pytest.skip("lab.replayer._scan was not built (no C compiler at install): the Python rule serves alone")
    assert m._token_set(text) == m._words_py(text)[0] - {""}


@settings(max_examples=100, deadline=None)
@given(_any_text)
def test_without_the_c_module_the_python_rule_gives_the_same_tokens(text: str) -> None:
    from lab.replayer import mentions as m

    saved = m._token_set
    m._token_set = None
    try:
        assert tokens(text) == _reference_tokens(text)
    finally:
        m._token_set = saved


def test_ci_builds_the_c_tokenizer() -> None:
    # The install makes it optional, so a build that failed would only make recall slower: CI says so loudly.
    import os

    from lab.replayer import mentions as m

    if not os.environ.get("CI"):
        pytest.skip("checked in CI, where the install must have built lab.replayer._scan")
    assert m._token_set is not None and m._settle is not None, "lab.replayer._scan was not built: see the pip install output for the compiler error"


@settings(max_examples=300, deadline=None)
@given(_any_text, st.data())
def test_the_c_checks_and_the_python_checks_hold_one_set(text: str, data: st.DataObject) -> None:
    from lab.replayer import mentions as m

    if m._settle is None:
        pytest.skip("lab.replayer._scan was not built (no C compiler at install): the Python checks serve alone")
    held = _reference_tokens(text)
    wanted = set(data.draw(st.lists(st.sampled_from(sorted(held) or ["none"]), max_size=8)))
    # Strings that share a shadow with a token without being one, and parts of dotted tokens.
    wanted |= {"a.b", "a-b", "b", "-b", "a.-b", "x~y", "never_there"}
    lookup = Lookup(wanted)
    assert lookup.held(text) == lookup._held_py(text) == wanted & held
