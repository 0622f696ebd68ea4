"""The names index a spill stub lists: what counts as a name, order, budget, escapes, the preview left out."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core.names_index import INDEX_HEADER, index_line, names_beyond


def test_code_names_in_first_seen_order() -> None:
    text = "Found in src/app/models.py: class HTTPServer and def parse_args; see os.path and userId.\nversion 3.11.4 done"
    assert names_beyond(text, "", 500) == ["src/app/models.py", "HTTPServer", "parse_args", "os.path", "userId"]


def test_prose_numbers_and_short_tokens_are_not_names() -> None:
    assert names_beyond("The quick brown fox ran 12345 times; 1.2.3 a_b x/y", "", 500) == []


def test_names_the_preview_shows_are_left_out_and_repeats_listed_once() -> None:
    text = "head: lib/core.py\nbody: lib/core.py lib/extra.py lib/extra.py get_value"
    assert names_beyond(text, "head: lib/core.py", 500) == ["lib/extra.py", "get_value"]


def test_budget_skips_a_long_name_but_keeps_filling() -> None:
    text = "aaaa_1 " + "b" * 40 + "_long cc_2"
    # 6 + 2 + 4 fits in 12; the 45-character name does not.
    assert names_beyond(text, "", 12) == ["aaaa_1", "cc_2"]
    assert names_beyond(text, "", 0) == [] and index_line(text, "", 0) == ""


def test_json_escapes_are_separators() -> None:
    text = r'{"text": "see\nsrc/main.ts and\tcreateUser\u0022"}'
    assert names_beyond(text, "", 200) == ["src/main.ts", "createUser"]


def test_index_line() -> None:
    assert index_line("call do_work in a/b.py", "", 100) == f"{INDEX_HEADER} do_work, a/b.py"
    assert index_line("nothing named here at all", "", 100) == ""


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab_/.XYz09 \n\\"), max_size=300), st.integers(min_value=0, max_value=80))
def test_index_stays_within_budget_and_holds_only_text_of_the_output(text: str, budget: int) -> None:
    names = names_beyond(text, "", budget)
    assert len(", ".join(names)) <= budget
    assert len(set(names)) == len(names)
    assert all(name in text for name in names)
