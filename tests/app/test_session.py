"""The Session page and the state behind it: loading (upload, sample, generator), the overview, temp folders."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from lab.core.providers import ProviderSettings
from lab.core.presets import preset
from lab.ui.replays import STATS_COUNTERS, summarizer_fingerprint
from tests.app.conftest import TIMEOUT, load_sample, metrics, new_app, no_exception, widget_keys
from tests.conftest import CORPUS_FILES, SAMPLES

CODEX = next((p for p in CORPUS_FILES if p.parent.name == "codex"), None)


def _bad_jsonl() -> bytes:
    lines = (SAMPLES / "claude-code-preview-xss.jsonl").read_text(encoding="utf-8").splitlines()
    return (lines[0] + "\n" + lines[1] + "\n" + '{"type": "user", broken\n').encode()


class TestEmptyState:
    def test_no_session_offers_loaders_and_one_click_sample(self, bare_app: AppTest) -> None:
        assert bare_app.file_uploader(key="session.upload") is not None
        assert bare_app.button(key="lab.load_sample").label == "Load a sample session"
        assert not bare_app.metric
        assert "none loaded" in [t.value for t in bare_app.sidebar.text]
        # the Session page does not send the user to the Session page
        (empty,) = [i.value for i in bare_app.info if i.value.startswith("No session loaded yet")]
        assert "on the Session page" not in empty and "above" in empty

    def test_one_click_sample_loads_the_small_session(self, bare_app: AppTest) -> None:
        load_sample(bare_app)
        m = metrics(bare_app)
        assert m["Messages"] == "81"
        assert int(m["Tool calls"]) > 0
        assert any("generated-small.lab.json" in t.value for t in bare_app.sidebar.text)


class TestOverview:
    def test_tokens_per_counter_and_tool_output_share(self, app: AppTest) -> None:
        m = metrics(app)
        for counter in STATS_COUNTERS:
            share = m[f"Tool output ({counter})"]
            assert share.endswith("%") and 50 <= int(share[:-1]) <= 100
        table = app.dataframe[0].value
        assert list(table["counter"]) == list(STATS_COUNTERS)
        assert (table["tokens"] > 0).all()

    def test_what_the_provider_saw_beyond_the_file_is_said_where_the_window_is_chosen(self, app: AppTest) -> None:
        # The small sample records the usage of its requests: the fit of it is on the page, in words.
        said = [c.value for c in app.caption] + [w.value for w in app.warning]
        assert any("tokens per request that this file does not hold" in s for s in said)

    def test_detected_format_is_shown(self, app: AppTest) -> None:
        assert any("detected format: lab" in t.value for t in app.text)

    def test_tool_calls_per_tool_table_shows_whole_names(self, app: AppTest) -> None:
        table = next(d.value for d in app.dataframe if list(d.value.columns) == ["tool", "calls"])
        assert len(table) > 0 and (table["calls"] > 0).all()
        assert list(table["calls"]) == sorted(table["calls"], reverse=True)

    def test_pick_another_sample_shows_its_import_notes(self, app: AppTest) -> None:
        app.selectbox(key="session.sample").set_value("claude-code-preview-xss.jsonl").run()
        app.button(key="session.load_sample").click().run()
        no_exception(app)
        assert any("detected format: claude_code" in t.value for t in app.text)
        skipped = [df.value for df in app.dataframe if "skipped record kind" in df.value.columns]
        assert skipped and "queue-operation" in " ".join(map(str, skipped[0]["skipped record kind"]))


class TestUpload:
    @pytest.mark.corpus("codex")
    def test_corpus_upload_is_imported_with_detection(self, bare_app: AppTest) -> None:
        assert CODEX is not None
        bare_app.file_uploader(key="session.upload").set_value((CODEX.name, CODEX.read_bytes(), "application/json")).run()
        no_exception(bare_app)
        assert any("detected format: openai_responses" in t.value for t in bare_app.text)
        assert not bare_app.error

    def test_bad_upload_shows_file_line_and_reason_and_app_keeps_running(self, bare_app: AppTest) -> None:
        bare_app.file_uploader(key="session.upload").set_value(("my session.jsonl", _bad_jsonl(), "application/json")).run()
        no_exception(bare_app)
        errors = [e.value for e in bare_app.error]
        assert len(errors) == 1
        assert errors[0].startswith("my session.jsonl: line 3: not JSON")
        # The app is still usable: the sample button works after the failure.
        load_sample(bare_app)
        assert metrics(bare_app)["Messages"] == "81"


class TestGenerator:
    def test_knobs_come_from_generator_config(self, bare_app: AppTest) -> None:
        from lab.generator import GeneratorConfig

        assert set(GeneratorConfig.model_fields) <= widget_keys(bare_app, "gen:")
        assert bare_app.number_input(key="gen:requests").value == GeneratorConfig().requests
        assert bare_app.slider(key="gen:error_rate").max == 1.0

    def test_generate_a_session(self, bare_app: AppTest) -> None:
        bare_app.number_input(key="gen:requests").set_value(6)
        bare_app.number_input(key="gen:seed").set_value(7)
        bare_app.button[[b.label for b in bare_app.button].index("Generate session")].click().run()
        no_exception(bare_app)
        assert any("generated (seed 7, 6 requests)" in t.value for t in bare_app.sidebar.text)

    def test_invalid_knobs_show_config_error(self, bare_app: AppTest) -> None:
        bare_app.number_input(key="gen:typical_output_chars").set_value(5000)
        bare_app.number_input(key="gen:max_output_chars").set_value(1000)
        bare_app.button[[b.label for b in bare_app.button].index("Generate session")].click().run()
        no_exception(bare_app)
        assert any("typical_output_chars must be <= max_output_chars" in e.value for e in bare_app.error)


def _show_session_dir() -> None:
    import streamlit as st

    from lab.ui.transcript import session_dir

    st.text(str(session_dir()))
    st.text(str(session_dir()))


class TestIsolation:
    def test_two_sessions_never_share_a_folder(self, _app_tmp: Path) -> None:
        one = AppTest.from_function(_show_session_dir, default_timeout=TIMEOUT)
        two = AppTest.from_function(_show_session_dir, default_timeout=TIMEOUT)
        one.run()
        two.run()
        a, b = one.text[0].value, two.text[0].value
        assert a == one.text[1].value  # stable within a session
        assert a != b
        assert Path(a).parent == Path(b).parent == _app_tmp

    def test_api_key_never_in_the_cache_key(self) -> None:
        cfg = preset("minicode").model_copy(update={"summary": preset("minicode").summary.model_copy(update={"summarizer": "anthropic"})})
        settings = ProviderSettings(provider="anthropic", api_key="sk-secret-123")
        fp = summarizer_fingerprint(cfg, settings)
        assert "sk-secret-123" not in fp
        other = summarizer_fingerprint(cfg, ProviderSettings(provider="anthropic", api_key="sk-other"))
        assert fp != other  # a new key is a new summarizer, without the key in clear
        assert summarizer_fingerprint(preset("minicode"), settings) == "rules"


def test_new_app_runs_without_state() -> None:
    at = new_app()
    assert at.title[0].value == "Session"


def _stale_objects_script() -> None:
    import streamlit as st
    from pydantic import BaseModel, create_model

    from lab.core.config import CompactionConfig
    from lab.core.messages import Transcript
    from lab.generator import generate
    from lab.ui.settings import get_config
    from lab.ui.transcript import get_transcript

    def twin(cls: type[BaseModel]) -> type[BaseModel]:
        # What a dev server's module reload leaves behind: same fields, a different class.
        return create_model(cls.__name__, __config__=cls.model_config, **{n: (f.annotation, f) for n, f in cls.model_fields.items()})

    if "lab.transcript" not in st.session_state:
        t = generate(requests=3)
        st.session_state["lab.transcript"] = twin(Transcript).model_validate(t.model_dump())
        st.session_state["lab.config"] = twin(CompactionConfig).model_validate(CompactionConfig(window=50_000).model_dump())
    st.text(f"{type(get_transcript()) is Transcript} {type(get_config()) is CompactionConfig} {get_config().window}")


def test_objects_from_a_reloaded_module_are_rebuilt() -> None:
    at = AppTest.from_function(_stale_objects_script, default_timeout=TIMEOUT)
    at.run()
    no_exception(at)
    assert at.text[0].value == "True True 50000"


class TestRecordedCompactions:
    def test_the_page_says_what_was_recorded_and_the_toggle_keeps_it(self, app: AppTest) -> None:
        app.selectbox(key="session.sample").set_value("claude-code-compacted.jsonl").run()
        app.button(key="session.load_sample").click().run()
        no_exception(app)
        info = " ".join(i.value for i in app.info)
        assert "1 recorded compaction(s) by Claude Code" in info and "replayed from the raw history" in info
        toggle = app.toggle(key="session.undo_recorded")
        assert toggle.value is True
        toggle.set_value(False).run()
        no_exception(app)
        assert "honoured, as the agent did" in " ".join(i.value for i in app.info)
        assert app.session_state["lab.replay_settings"].recorded_compactions == "keep"

    def test_a_session_without_recorded_compactions_shows_no_toggle(self, app: AppTest) -> None:
        keys = {t.key for t in app.toggle}
        assert "session.undo_recorded" not in keys


# --- the proposed window (lab.replayer.window, applied on load) ----------------------------------------

REPEAT = "generated-repeat-reads.lab.json"  # a sample whose sent peak is large enough for a proposal under minicode
ATTIO = "claude-code/attio-mcp-server-session.jsonl"  # 70k tokens per request hidden from the file (MCP tools)
SETTINGS_KEY = "lab.replay_settings"


def _load(at: AppTest, name: str) -> AppTest:
    at.selectbox(key="session.sample").set_value(name).run()
    at.button(key="session.load_sample").click().run()
    no_exception(at)
    return at


def _window_line(at: AppTest) -> str:
    lines = [i.value for i in at.info if i.value.startswith("Window: ")]
    assert len(lines) == 1, [i.value for i in at.info]
    return lines[0]


def _config(at: AppTest):  # noqa: ANN202 - a CompactionConfig
    return at.session_state["lab.config"]


def _summaries_in_force(at: AppTest, path: Path) -> int:
    """Summaries of the replay the app runs now: its config and settings, as in force."""
    from lab.replayer import replay
    from lab.replayer.window import summaries

    return summaries(replay(path, _config(at), settings=at.session_state[SETTINGS_KEY], recall=False))


def _keys(at: AppTest) -> set[str]:
    return {str(b.key) for b in at.button}


class TestProposedWindow:
    def test_a_sample_is_run_at_the_proposed_window_and_summarizes(self, app: AppTest) -> None:
        from lab.replayer.window import propose_window

        _load(app, REPEAT)
        expected = propose_window(SAMPLES / REPEAT, config="minicode")
        assert expected.window is not None
        assert _config(app).window == expected.window
        assert _window_line(app).startswith(f"Window: {expected.reason}.")
        assert f"--preset minicode --window {expected.window} --hidden-tokens auto" in _window_line(app)
        assert _summaries_in_force(app, SAMPLES / REPEAT) >= 1
        assert any(f"window {expected.window:,}" in t.value for t in app.sidebar.text)
        # applied already: the one click offered is back to the model's window
        assert "session.use_proposed_window" not in _keys(app)
        assert app.button(key="session.use_model_window").label == "Use the model's window (200,000)"

    def test_one_click_back_to_the_models_window_and_again_to_the_proposal(self, app: AppTest) -> None:
        _load(app, REPEAT)
        proposed = _config(app).window
        app.button(key="session.use_model_window").click().run()
        no_exception(app)
        assert _config(app).window == preset("minicode").window == 200_000
        assert _summaries_in_force(app, SAMPLES / REPEAT) == 0
        assert "session.use_model_window" not in _keys(app)
        app.button(key="session.use_proposed_window").click().run()
        no_exception(app)
        assert _config(app).window == proposed

    def test_a_small_session_keeps_the_window_and_says_why(self, app: AppTest) -> None:
        assert _config(app).window == preset("minicode").window == 200_000
        line = _window_line(app)
        assert line.startswith("Window: no window proposed: the session peaks at only ")
        assert "keeps its own window" in line
        assert not _keys(app) & {"session.use_model_window", "session.use_proposed_window"}

    def test_presets_and_reset_keep_the_sessions_window(self, app: AppTest) -> None:
        _load(app, REPEAT)
        proposed = _config(app).window
        app.switch_page("../pages/pipeline.py").run()
        no_exception(app)
        app.selectbox(key="pipeline.preset").set_value("mewcode").run()
        no_exception(app)
        assert _config(app).window == proposed
        assert _config(app).spill.threshold == preset("mewcode").spill.threshold
        # the window is the session's: no ● for it, and reset keeps it
        assert not any("changed from the preset" in c.value for c in app.caption)
        app.button(key="pipeline.reset").click().run()
        no_exception(app)
        assert _config(app).window == proposed

    def test_a_window_picked_later_stands_and_the_proposal_can_be_reapplied(self, app: AppTest) -> None:
        _load(app, REPEAT)
        proposed = _config(app).window
        app.switch_page("../pages/pipeline.py").run()
        gen = app.session_state["lab.widget_gen"]
        app.number_input(key=f"cfg{gen}:window").set_value(100_000).run()
        no_exception(app)
        app.switch_page("../pages/session.py").run()
        no_exception(app)
        assert _config(app).window == 100_000
        assert "The window is now 100,000" in _window_line(app)
        app.button(key="session.use_proposed_window").click().run()
        no_exception(app)
        assert _config(app).window == proposed
        assert "session.use_proposed_window" not in _keys(app)

    @pytest.mark.corpus(ATTIO)
    def test_a_real_session_with_hidden_tools_compacts_at_the_proposal(self, app: AppTest) -> None:
        from tests.conftest import corpus_file

        path = corpus_file(ATTIO)
        _load(app, "corpus/" + ATTIO)
        line = _window_line(app)
        window = _config(app).window
        assert window < 200_000
        assert line.startswith(f"Window: window {window:,} proposed so this session compacts")
        # the hidden part is counted: the window is larger than it, and the replay counts it too
        hidden = int(line.split(" hidden")[0].rsplit("+ ", 1)[1].replace(",", ""))
        assert window > hidden > 10_000
        assert app.session_state[SETTINGS_KEY].hidden_from_usage
        said = [c.value for c in app.caption] + [w.value for w in app.warning]
        assert any(f"this replay counts {hidden:,} hidden tokens on every request" in s for s in said)
        assert _summaries_in_force(app, path) >= 1
        app.button(key="session.use_model_window").click().run()
        no_exception(app)
        assert _config(app).window == 200_000
