"""View-models of the front ends: what a page or the notebook shows, built as plain data, with no Streamlit.

They sit on the floor below the front ends (``lab.ui``, the Streamlit helpers, and ``lab.notebook``) and above
what they present (``lab.replayer`` reports, ``lab.core`` messages and configs, ``lab.formats`` for uploads),
so every rule they hold is unit-tested without a page and the notebook can reuse them. A test imports each
module in a fresh interpreter and checks that Streamlit stays unloaded.

- ``diff``: one context before and after the pipeline, lined up for the Diff page and the notebook.
- ``summary``: the summaries a replay wrote, its retention table, and an LLM summary beside the rule-based one.
- ``export``: the files the Export page offers (config, replay settings, a request, the report), as bytes.
- ``files``: per-session upload folders, safe upload names, importing an upload; the content hash of cache keys.
- ``markdown``: transcript text made safe to show through a markdown renderer.
"""

__all__ = ["diff", "export", "files", "markdown", "summary"]
