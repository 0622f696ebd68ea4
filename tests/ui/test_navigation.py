"""The request pickers pages draw: set to the shared selection before drawing, and selecting on change."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

TIMEOUT = 60


def _picker_page() -> None:
    import streamlit as st

    from lab.ui.navigation import request_picked, selected_request, show_request

    # The Timeline's pattern: the picker follows the shared selection (a chart click, a link) ...
    show_request("test.request", selected_request())
    st.number_input("Request", min_value=0, max_value=20, step=1, key="test.request",
                    on_change=request_picked, args=("test.request",))
    st.text(f"selected {selected_request()}")


def test_a_picked_request_becomes_the_shared_selection() -> None:
    at = AppTest.from_function(_picker_page, default_timeout=TIMEOUT)
    at.run()
    assert not at.exception
    assert at.text[0].value == "selected 0"
    at.number_input(key="test.request").set_value(7).run()
    assert not at.exception
    assert at.text[0].value == "selected 7"
    assert at.session_state["lab.request"] == 7 and list(at.query_params["request"]) == ["7"]


def test_the_picker_follows_a_selection_made_elsewhere() -> None:
    at = AppTest.from_function(_picker_page, default_timeout=TIMEOUT)
    at.run()
    # ... and a selection made elsewhere (Diff, a chart point) shows in it on the next run.
    at.session_state["lab.request"] = 12
    at.run()
    assert not at.exception
    assert at.number_input(key="test.request").value == 12
