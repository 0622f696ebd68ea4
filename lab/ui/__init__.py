"""Streamlit helpers of the app.

``state`` is the one import the pages need: it re-exports the session state,
which lives by concern in ``transcript`` (the loaded session and its upload
folder), ``settings`` (config, presets, saved configs, LLM settings),
``replays`` (cached replay, stats and compare results) and ``navigation``
(the selected request, page links, the sidebar), with the key names in
``keys``; ``reload`` rebuilds the models they keep after Streamlit
re-imports the project's modules. ``files`` holds the per-session folders,
``widgets`` builds the controls from the config models, and ``diff``,
``summary``, ``export``, ``llm`` and ``views`` shape core results for the
pages; ``session_view`` draws the Session page's sections.

Only the app and its pages import this package; ``lab.core`` never does.
"""

__all__ = ["files", "state", "widgets"]
