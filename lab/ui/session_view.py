"""The Session page's sections: the three ways to load a session, and what the page says about the loaded one.

    upload_tab / sample_tab / generate_tab   the loaders, each importing through ``transcript`` and rerunning on success
    session_picker(notes)        one session of an upload of several, or the info that the store held others
    window_proposal()            the window proposed on load, a button back to the model's window, one to apply it again
    usage_fit()                  what the recorded usage says the provider saw beyond the file
    counts(stats)                the row of counts
    recorded_compactions()       the agent's own compactions, and the toggle that undoes or keeps them
    tokens_per_counter(stats) / tool_calls_per_tool(stats) / import_notes(notes, stats)   the tables

``window_line``, ``fit_notice``, ``recorded_line`` and ``note_rows`` build
their texts and rows without drawing, so they are tested as plain functions.

Transcript text (titles, file names, skipped kinds) goes through
``literal_markdown`` before any element that renders markdown, or into
``st.text`` and dataframe cells, which show it as written. Widget keys are
the page's own (``session.*``), so its AppTests and a user's state carry over.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd
import streamlit as st

from ..core.config import with_value
from ..errors import LabError
from ..formats.containers import archive
from ..formats.sanity import misread_warnings
from ..generator import GeneratorConfig, parse_generator_config
from ..replayer.overhead import describe_fit
from . import widgets
from .replays import get_recorded, get_usage_fit, get_window_proposal
from .settings import get_config, get_preset_name, get_settings, recorded_mode, set_config, set_recorded_mode, set_session_window
from .transcript import (
    accept_upload,
    generate_session,
    load_sample,
    sample_files,
    session_choices,
    session_pick_error,
    session_picked,
    show_session,
    upload_error,
)
from ..views.files import several_sessions
from ..views.markdown import literal_markdown

if TYPE_CHECKING:  # pragma: no cover
    from ..core.messages import ImportNotes
    from ..core.stats import TranscriptStats
    from ..replayer.overhead import UsageFit
    from ..replayer.recorded import RecordedCompaction
    from ..replayer.window import WindowProposal

__all__ = [
    "upload_tab",
    "sample_tab",
    "generate_tab",
    "session_picker",
    "window_line",
    "window_proposal",
    "use_model_window",
    "fit_notice",
    "usage_fit",
    "counts",
    "recorded_line",
    "recorded_compactions",
    "tokens_per_counter",
    "tool_calls_per_tool",
    "note_rows",
    "import_notes",
]

# Hidden tokens from this share of the window on are a warning: a real agent reaches the watermark sooner.
_LOUD_HIDDEN_SHARE = 0.1
# Recorded compactions named by position in the info line; the captions below it list every one.
_RECORDED_NAMED = 8


# --- loading ----------------------------------------------------------------------------------


def upload_tab() -> None:
    """The uploader; an import that succeeds reruns the app, one that fails leaves its error on the tab."""
    uploaded = st.file_uploader(
        "A transcript in any format the importers read (detected from the content)",
        key="session.upload",
        # Read at each draw, not import: the limit is the archive module's (a test lowers it there).
        help="A transcript file (JSON, JSONL, Markdown, ...); an agent's session store: Goose's sessions.db, "
        "OpenCode's opencode.db, Cursor's state.vscdb, Zed's threads.db, Crush's crush.db or an OpenAI Agents SDK session database (the most recently updated session is read; a picker lists the others); or, as a browser cannot upload a "
        "folder, a .zip or .tar.gz of a session folder: a Cline / Roo Code task folder, an OpenHands V1 conversation "
        f"folder, OpenCode's storage/ folder; or one compressed transcript (.jsonl.zst as Codex writes, .gz, .bz2, .xz). "
        f"An archive or a compressed file may unpack to at most {archive.MAX_UNPACKED_BYTES // 2**20} MiB.",
    )
    if uploaded is not None:
        with st.spinner(f"Importing {uploaded.name}..."):
            loaded = accept_upload(uploaded.name, uploaded.getvalue(), uploaded.file_id)
        if loaded is not None:
            st.rerun()  # so the sidebar, drawn before this page, shows the new session
    if upload_error():
        st.error(upload_error())


def sample_tab() -> None:
    name = st.selectbox("Sample session", sample_files(), key="session.sample")
    if st.button("Load sample", key="session.load_sample"):
        try:
            load_sample(name)
            st.rerun()
        except LabError as e:
            st.error(str(e))


def generate_tab() -> None:
    """The generator's knobs, built from ``GeneratorConfig``'s fields, in a form so nothing runs before the click."""
    with st.form("session.generate"):
        values = widgets.render_fields(widgets.field_specs(GeneratorConfig), {}, key_prefix="gen", columns=3)
        submitted = st.form_submit_button("Generate session")
    if submitted:
        try:
            with st.spinner("Generating..."):
                generate_session(parse_generator_config(values))
            st.rerun()
        except LabError as e:
            st.error(str(e))


# --- the overview -----------------------------------------------------------------------------


def session_picker(notes: ImportNotes) -> None:
    choices = session_choices()
    if choices is not None:
        # A file of several sessions: the picker lists every one (what the reader's warning named), as plain text.
        show_session("session.pick")
        st.selectbox("Session", choices.ids, format_func=choices.label, key="session.pick", on_change=session_picked,
                     args=("session.pick",), help="The sessions this file holds, newest first: title, id, messages, last update. "
                     "Another one replaces the transcript (its replays are its own); the config stays.")
        st.text(choices.describe())
    else:
        # A store of many sessions gives its newest: said where it is seen (the text quotes titles, so escaped).
        for several in several_sessions(notes):
            st.info(literal_markdown(several))
    if session_pick_error():
        st.error(session_pick_error())


def window_line(proposal: WindowProposal, window: int, preset: str = "minicode") -> str:
    """What was proposed and why, and the window now in force when the user picked another since."""
    note = "" if proposal.window in (None, window) else f" The window is now {window:,}; pick any on the Pipeline page."
    if proposal.window is not None and proposal.window == window and proposal.hidden:
        # The app counts the hidden part for this window; the CLI does when asked, so its figures can be matched.
        note += (f" The replays count the {proposal.hidden:,} hidden tokens too; the same replay from the command line: "
                 f"`python -m lab replay FILE --preset {preset} --window {window} --hidden-tokens auto --report OUT.json` "
                 "(`--window proposed` measures the same window).")
    return f"Window: {proposal.reason}.{note}"


def use_model_window(window: int) -> None:
    """Back to the model's own window: the session's proposal is no longer applied (a preset switch keeps it so)."""
    set_session_window(None)
    cfg = get_config()
    if cfg.window != window:
        set_config(with_value(cfg, "window", window))


def window_proposal() -> None:
    """The proposal was applied on load; it is shown again (with the current config) so the user knows why,
    with one click back to the model's own window, or to the proposal again."""
    try:
        proposal = get_window_proposal()
    except LabError as e:
        st.warning(f"No window proposed: {e}")
        return
    if proposal is None:  # nothing loaded: the page stops before this
        return
    window = get_config().window
    st.info(window_line(proposal, window, get_preset_name()))
    if proposal.window is None:
        return
    if proposal.window != window:  # noqa: SIM102 - the outer test shows the button, the inner one reads its click
        if st.button(f"Use the proposed window ({proposal.window:,})", key="session.use_proposed_window"):
            set_session_window(proposal.window)
            st.rerun()
    if proposal.model_window != window:  # noqa: SIM102 - as above
        if st.button(f"Use the model's window ({proposal.model_window:,})", key="session.use_model_window",
                     help="Replay at the model's own window: the session then never fills it and no summary runs."):
            use_model_window(proposal.model_window)
            st.rerun()


def fit_notice(fit: UsageFit | dict[str, Any] | None, window: int, *, applied: int = 0) -> tuple[str, bool] | None:
    """The usage fit (a report's ``usage_fit`` too) as a sentence, and whether it is loud: its hidden tokens
    are a real share of ``window`` and the replay did not count them (``applied``, as ``describe_fit``)."""
    line = describe_fit(fit, window, applied=applied)
    if line is None:
        return None
    hidden = 0 if fit is None else int(fit.get("hidden_tokens", 0)) if isinstance(fit, dict) else fit.hidden_tokens
    return line[0].upper() + line[1:] + ".", not applied and hidden >= _LOUD_HIDDEN_SHARE * window


def usage_fit() -> None:
    """What the provider saw beyond the file (system prompt, tool definitions), from the recorded usage.

    It counts against the real window, so it is said where the window is chosen.
    """
    fit, settings = get_usage_fit(), get_settings()
    # What the replays count now: the settings' own number, or the fit's when they take it from the usage.
    applied = settings.hidden_tokens or (max(0, fit.hidden_tokens) if settings.hidden_from_usage and fit is not None else 0)
    notice = fit_notice(fit, get_config().window, applied=applied)
    if notice is not None:
        said, loud = notice
        (st.warning if loud else st.caption)(said)


def counts(stats: TranscriptStats) -> None:
    cols = st.columns(5)
    cols[0].metric("Messages", stats.messages)
    cols[1].metric("Tool calls", stats.tool_calls)
    cols[2].metric("Tool errors", stats.tool_errors)
    cols[3].metric("Images", stats.images)
    cols[4].metric("Sidechains", stats.sidechains)


def recorded_line(recorded: list[RecordedCompaction], undo: bool) -> str:
    """How many compactions the agent recorded, by whom, where, and what the replay does with them."""
    agents = ", ".join(sorted({c.agent for c in recorded}))
    where = ", ".join(f"message {c.index}" for c in recorded[:_RECORDED_NAMED]) + (" ..." if len(recorded) > _RECORDED_NAMED else "")
    how = "replayed from the raw history" if undo else "honoured, as the agent did"
    return f"This session contains {len(recorded)} recorded compaction(s) by {agents} (at {where}); {how}."


def recorded_compactions() -> None:
    """The agent's own compactions, when it recorded any: said, listed, and a toggle to undo or keep them."""
    recorded = get_recorded()
    if not recorded:
        return
    undo = recorded_mode() == "undo"
    st.info(recorded_line(recorded, undo))
    for c in recorded:
        st.caption(c.describe())
    if st.toggle(
        "Undo the agent's recorded compactions",
        value=undo,
        key="session.undo_recorded",
        help="On: replay the raw history as if the agent had never compacted, so the config alone decides what is sent. "
        "Off: honour the agent's own compactions; everything before each is dropped whatever the config does.",
    ) != undo:
        set_recorded_mode("keep" if undo else "undo")
        st.rerun()


# --- the tables -------------------------------------------------------------------------------


def tokens_per_counter(stats: TranscriptStats) -> None:
    """The tool-output share per counter as metrics, then every counter's total beside its share."""
    tokens = pd.DataFrame(
        {
            "counter": list(stats.tokens),
            "tokens": list(stats.tokens.values()),
            "tool output share": [stats.tool_output_share[c] for c in stats.tokens],
        }
    )
    share_cols = st.columns(len(stats.tokens))
    for col, (counter, share) in zip(share_cols, stats.tool_output_share.items(), strict=True):
        col.metric(f"Tool output ({counter})", f"{share:.0%}", help=f"{stats.tokens[counter]:,} tokens in all")
    st.dataframe(tokens, hide_index=True, column_config={
        "tokens": st.column_config.NumberColumn(format="localized"),
        "tool output share": st.column_config.NumberColumn(format="percent"),
    })


def tool_calls_per_tool(stats: TranscriptStats) -> None:
    if not stats.tool_calls_by_tool:
        st.text("No tool calls in this session.")
        return
    by_tool = pd.DataFrame({"tool": list(stats.tool_calls_by_tool), "calls": list(stats.tool_calls_by_tool.values())})
    # A table with in-cell bars: a chart's axis cuts long tool names (mcp__github__a...), a text column does not.
    most = int(by_tool["calls"].max())
    st.dataframe(by_tool.sort_values("calls", ascending=False), hide_index=True, key="session.tools", column_config={
        "tool": st.column_config.TextColumn(width="large"),
        "calls": st.column_config.ProgressColumn(format="%d", min_value=0, max_value=most),
    })


def note_rows(notes: ImportNotes) -> list[tuple[str, str]]:
    """What the import dropped, warned about or left unpaired, one (note, detail) row each, in that order."""
    return (
        [("dropped", d) for d in notes.dropped]
        + [("warning", w) for w in notes.warnings]
        + [("orphan tool result", i) for i in notes.orphan_tool_results]
        + [("unanswered tool call", i) for i in notes.unanswered_tool_uses]
    )


def import_notes(notes: ImportNotes, stats: TranscriptStats) -> None:
    # A possible misread (lab.formats.sanity) is said loudly; the text names files and skipped kinds from
    # the transcript, so markdown is escaped to show it as written.
    for misread in misread_warnings(notes):
        st.warning(literal_markdown(misread), icon="⚠️")
    roles = ", ".join(f"{n:,} {role}" for role, n in stats.by_role.items()) or "none"
    st.caption(f"{notes.records_read:,} records read; messages by role: {roles}")
    if notes.skipped:
        st.dataframe(pd.DataFrame({"skipped record kind": list(notes.skipped), "count": list(notes.skipped.values())}), hide_index=True)
    problems = note_rows(notes)
    if problems:
        st.dataframe(pd.DataFrame(problems, columns=["note", "detail"]), hide_index=True)
    if not notes.skipped and not problems:
        st.text("Nothing was skipped or dropped.")
