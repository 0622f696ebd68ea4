"""Streamlit helpers of the app, and only those: every module here but ``keys`` and ``reload`` imports Streamlit.

The per-browser-session state lives by concern, and pages import each name from its module:
``transcript`` (the loaded session and its upload folder), ``settings`` (config, presets, saved
configs, LLM settings), ``replays`` (cached replay, stats and compare results), ``navigation``
(the selected request, the request picker, page links, the sidebar) and ``sweep`` (the Sweep page's
sessions and result). ``keys`` names their ``st.session_state`` keys; ``reload`` rebuilds the models
they keep after Streamlit re-imports the project's modules.

The drawing helpers: ``widgets`` builds the controls from the config models, ``session_view`` draws
the Session page's sections, ``diff_page`` the Diff page's, ``compare_page`` the Compare page's table
and what is said beside it, ``explain`` the words beside the numbers
(costs, compactions, invalid requests, what a config skips by design), ``alerts`` a replay's alerts,
and ``llm`` and ``probe`` the Summary page's LLM panels.

The data they draw comes from ``lab.views`` (no Streamlit): the diff, the summaries, the export
files, the upload files, safe markdown. Only the app and its pages import this package; ``lab.core``
never does.
"""

__all__ = ["navigation", "replays", "settings", "sweep", "transcript", "widgets"]
