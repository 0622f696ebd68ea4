"""The Export page: config downloads that round-trip, request bodies, the report, restore, and no keys."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
from streamlit.testing.v1 import AppTest

from lab.core import Compactor, CompactionConfig, dump_config, load_config, preset
from lab.errors import ConfigError
from lab.formats import load
from lab.replayer import Report, replay
from lab.replayer.settings import ReplaySettings, load_settings
from lab.views import export
from lab.core.config import with_value, with_values
from tests.builders import session
from tests.conftest import ROOT, SAMPLES

TIMEOUT = 120
APP = str(ROOT / "lab" / "app.py")
PAGE = str(ROOT / "pages" / "export.py")
SMALL = "generated-small.lab.json"
KEY = "sk-ant-test-EXPORT-5b2e8c41-must-never-leak"


def _page(page: str, sample: str | None = None) -> None:
    import runpy

    from lab.ui.transcript import get_transcript, load_sample

    if sample is not None and get_transcript() is None:
        load_sample(sample)
    runpy.run_path(page, run_name="__main__")


# A result whose call is not in the transcript (a log cut at its start), under an id markdown would act on.
ORPHAN_ID = "gone_[x](javascript:1)"


def _orphan_transcript() -> Any:
    from lab.core.messages import Message, ToolResultBlock, Transcript
    from tests.builders import call_and_result, system, user

    orphan = Message(role="user", id="orphan", content=(ToolResultBlock(tool_use_id=ORPHAN_ID, content="old output"),))
    return Transcript(messages=[system(), user("go on"), orphan, *call_and_result("Read", "data", tool_id="t0", file_path="a.py")])


def _hostile_call_transcript() -> Any:
    """A whole call under ORPHAN_ID: the replay keeps the pair as it is, and the Anthropic export must rewrite the id."""
    from lab.core.messages import Transcript
    from tests.builders import assistant, call_and_result, system, user

    return Transcript(messages=[system(), user("go on"), *call_and_result("Read", "data", tool_id=ORPHAN_ID, file_path="a.py"), assistant("done")])


def _orphan_page(page: str) -> None:
    import runpy

    from lab.ui.navigation import select_request
    from lab.ui.transcript import get_transcript, set_transcript
    from tests.app.test_export import _hostile_call_transcript

    if get_transcript() is None:
        set_transcript(_hostile_call_transcript(), "orphan")
        select_request(1)  # the request whose context holds the call
    runpy.run_path(page, run_name="__main__")


def page_test(sample: str | None = None) -> AppTest:
    return AppTest.from_function(_page, default_timeout=TIMEOUT, kwargs={"page": PAGE, "sample": sample})


@pytest.fixture
def downloads(monkeypatch: pytest.MonkeyPatch) -> dict[str, tuple[str | None, bytes]]:
    """Every payload handed to a download button, by media file id: (file name, bytes)."""
    seen: dict[str, tuple[str | None, bytes]] = {}
    original = MemoryMediaFileStorage.load_and_get_id

    def record(self: Any, path_or_data: Any, mimetype: str, kind: Any, filename: str | None = None) -> str:
        file_id = original(self, path_or_data, mimetype, kind, filename)
        if isinstance(path_or_data, bytes):
            seen[file_id] = (filename, path_or_data)
        return file_id

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", record)
    return seen


def payloads(at: AppTest, seen: dict[str, tuple[str | None, bytes]]) -> dict[str, bytes]:
    """The bytes behind each download button of the last run, by button key."""
    out: dict[str, bytes] = {}
    for button in at.get("download_button"):
        file_id = Path(button.proto.url).stem
        out[button.key or button.label] = seen[file_id][1]
    return out


class TestFiles:
    @pytest.mark.parametrize("fmt", ["json", "yaml", "toml"])
    def test_config_round_trips_to_the_same_replay(self, fmt: str) -> None:
        cfg = with_values(preset("minicode"), {"window": 9000, "watermark.ratio": 0.7})
        f = export.config_file(cfg, fmt)  # type: ignore[arg-type]
        assert f.name == f"compaction.{fmt}" and f.mime == export.CONFIG_FORMATS[fmt]
        back = load_config(f.data, fmt)  # type: ignore[arg-type]
        assert back == cfg
        transcript = load(SAMPLES / SMALL)
        assert replay(transcript, back).totals() == replay(transcript, cfg).totals()

    def test_unknown_format(self) -> None:
        with pytest.raises(ConfigError, match="unknown config format"):
            export.config_file(CompactionConfig(), "ini")  # type: ignore[arg-type]

    @pytest.mark.parametrize("shape", ["anthropic", "openai"])
    def test_request_body_is_the_context_sent_at_k(self, shape: str) -> None:
        transcript = load(SAMPLES / SMALL)
        report = replay(transcript, "minicode")
        k = len(report.rows) - 1
        body = json.loads(export.transcript_file(report, k, shape, transcript.tools).data)  # type: ignore[arg-type]
        assert "messages" in body and body["messages"]
        if shape == "anthropic":
            assert "system" in body or body["messages"][0]["role"] == "user"
            assert {m["role"] for m in body["messages"]} <= {"user", "assistant"}
        else:
            assert any(m["role"] == "tool" for m in body["messages"])

    @pytest.mark.parametrize("shape", ["anthropic", "openai"])
    def test_request_body_says_what_the_export_had_to_change(self, shape: str) -> None:
        # Unrepaired: the replay would send the orphan as text itself (and say so in its notes), leaving the export nothing to change.
        report = replay(_orphan_transcript(), "minicode", repair=False)
        file = export.transcript_file(report, len(report.rows) - 1, shape)  # type: ignore[arg-type]
        (warning,) = file.warnings
        assert "whose call is not in this transcript" in warning and ORPHAN_ID in warning
        assert "[tool result for" in file.data.decode()
        clean = export.transcript_file(replay(load(SAMPLES / SMALL), "minicode"), 0, shape)  # type: ignore[arg-type]
        assert clean.warnings == ()

    def test_report_file_reads_back(self) -> None:
        report = replay(load(SAMPLES / SMALL), "mewcode")
        back = Report.from_dict(json.loads(export.report_file(report).data))
        assert back.totals() == report.totals()

    def test_snippet_uses_the_real_api(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        (tmp_path / "compaction.json").write_text(dump_config(preset("mewcode")))
        monkeypatch.chdir(tmp_path)
        scope: dict[str, Any] = {"messages": session(n_reads=3, size=60_000)}
        exec(export.python_snippet("compaction.json"), scope)  # noqa: S102 - our own snippet
        assert isinstance(scope["compactor"], Compactor)
        assert scope["outcome"].tokens_after < scope["outcome"].tokens_before, "MewCode spills the 60 KB reads"

    @pytest.mark.parametrize("name", ["c.yml", "c.yaml", "c.toml", "c.json", "c"])
    def test_restore_by_extension(self, name: str) -> None:
        cfg = preset("codex")
        fmt = {"yml": "yaml"}.get(name.rsplit(".", 1)[-1], name.rsplit(".", 1)[-1]) if "." in name else "json"
        assert export.restore_config(name, dump_config(cfg, fmt).encode()) == cfg  # type: ignore[arg-type]

    def test_restore_errors_name_the_file_and_field(self) -> None:
        with pytest.raises(ConfigError, match=r"c\.json: config field window"):
            export.restore_config("c.json", b'{"window": 5}')
        with pytest.raises(ConfigError, match="unknown config file type .ini"):
            export.restore_config("c.ini", b"")
        with pytest.raises(ConfigError, match="not UTF-8"):
            export.restore_config("c.json", b"\xff\xfe\x00")


class TestPage:
    def test_without_a_session_the_config_still_exports(self, downloads: dict[str, tuple[str | None, bytes]]) -> None:
        at = page_test().run()
        assert not at.exception
        files = payloads(at, downloads)
        assert set(files) == {f"lab.export.{kind}.{fmt}" for kind in ("config", "settings") for fmt in ("json", "yaml", "toml")}
        # The agent config alone: no replay section, so an agent loads it without a warning (warnings are errors here).
        agent = json.loads(files["lab.export.config.json"])
        assert "replay" not in agent and load_config(files["lab.export.config.json"], "json") == preset("minicode")
        for fmt in ("json", "yaml", "toml"):
            assert load_settings(files[f"lab.export.settings.{fmt}"], fmt) == ReplaySettings()  # type: ignore[arg-type]
        assert "Compactor(load_config('compaction.json'))" in at.code[0].value
        assert at.button(key="lab.load_sample"), "a one-click sample for the rest"

    def test_with_a_sample_every_file_is_offered(self, downloads: dict[str, tuple[str | None, bytes]]) -> None:
        at = page_test(SMALL).run()
        assert not at.exception and not at.error
        files = payloads(at, downloads)
        assert {"lab.export.request_file", "lab.export.report"} <= set(files)
        picker = at.number_input(key="lab.export.request")
        picker.set_value(picker.max).run()
        k = int(picker.max)
        button = next(b for b in at.get("download_button") if b.key == "lab.export.request_file")
        assert button.label == f"Request {k} (anthropic)"
        body = json.loads(payloads(at, downloads)["lab.export.request_file"])
        assert body["messages"][-1]["role"] in ("user", "assistant")
        assert all(m["role"] in ("user", "assistant") for m in body["messages"])
        at.radio(key="lab.export.shape").set_value("openai").run()
        body = json.loads(payloads(at, downloads)["lab.export.request_file"])
        assert any(m["role"] == "tool" for m in body["messages"]), "OpenAI shape: results become tool messages"
        report = json.loads(files["lab.export.report"])
        assert report["lab_replay_report"] == 1 and report["config"]["label"] == "minicode"

    def test_a_request_the_export_had_to_change_says_so_as_written(self) -> None:
        at = AppTest.from_function(_orphan_page, default_timeout=TIMEOUT, kwargs={"page": PAGE}).run()
        assert not at.exception and not at.error
        (warning,) = [w.value for w in at.warning if "differs from the replayed context" in w.value]
        # The tool id is the transcript's: escaped, so its brackets never become a link.
        assert r"gone\_\[x\]\(javascript\:1\)" in warning

    def test_restore_a_config_upload(self) -> None:
        cfg = with_value(preset("mewcode"), "window", 123_000)
        at = page_test(SMALL).run()
        at.file_uploader(key="lab.export.upload").upload("mine.yaml", dump_config(cfg, "yaml").encode(), "application/x-yaml").run()
        assert not at.exception and not at.error
        assert any("Settings restored" in s.value for s in at.success)
        assert yaml.safe_load(at.session_state["lab.config"].model_dump_json()) == yaml.safe_load(cfg.model_dump_json())

    def test_an_old_config_upload_applies_both_halves_and_says_so(self) -> None:
        cfg = with_value(preset("mewcode"), "window", 123_000)
        old = {**cfg.model_dump(mode="json"), "replay": {"seconds_per_request": 12.0, "pricing": {"input_per_mtok": 4.0}}}
        at = page_test(SMALL).run()
        at.file_uploader(key="lab.export.upload").upload("old.json", json.dumps(old).encode(), "application/json").run()
        assert not at.exception and not at.error
        assert any("'replay' section" in i.value and "Settings restored" in i.value for i in at.info)
        assert at.session_state["lab.config"] == cfg
        settings = at.session_state["lab.replay_settings"]
        assert settings.seconds_per_request == 12.0 and settings.pricing.input_per_mtok == 4.0
        # The settings download now carries them, the config download does not.
        assert "replay" not in json.loads(export.config_file(at.session_state["lab.config"]).data)

    def test_bad_config_upload_names_the_field(self) -> None:
        at = page_test(SMALL).run()
        at.file_uploader(key="lab.export.upload").upload("bad.json", b'{"window": 5}', "application/json").run()
        assert not at.exception
        assert at.error and "window" in at.error[0].value and "bad.json" in at.error[0].value
        assert at.title[0].value == "Export" and at.get("download_button"), "the page keeps working"


def test_an_api_key_is_never_exported(
    downloads: dict[str, tuple[str | None, bytes]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Not in any download, report, log line, or file the app wrote (uploads, spills)."""
    import logging

    monkeypatch.setenv("LAB_APP_TMP", str(tmp_path / "app-tmp"))
    caplog.set_level(logging.DEBUG)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.switch_page("../pages/summary.py").run()
    at.button(key="lab.load_sample").click().run()
    at.toggle(key="lab.summary.llm").set_value(True).run()
    at.radio(key="lab.llm.provider").set_value("anthropic").run()
    at.text_input(key="lab.llm.key").input(KEY).run()
    assert at.session_state["lab.llm"].secret() == KEY, "the key is set in the panel"
    at.switch_page("../pages/export.py").run()
    assert not at.exception
    for shape in ("anthropic", "openai"):
        at.radio(key="lab.export.shape").set_value(shape).run()
        files = payloads(at, downloads)
        assert len(files) == 8
        for name, data in files.items():
            assert KEY.encode() not in data, name
    assert all(KEY.encode() not in data for _, data in downloads.values())
    assert downloads, "the payloads were really captured"
    assert KEY not in caplog.text
    written = [p for p in (tmp_path / "app-tmp").rglob("*") if p.is_file()]
    assert all(KEY.encode() not in p.read_bytes() for p in written)


# --- a key pasted into the transcript, and lone surrogates (issue 27, part 4) ------------------------------

# Built from pieces, so the test file holds no string a secret scanner would flag.
PASTED = "sk-" + "ant-api03-" + "Q8x2Lm4Np6Rt8Vx0Zb2Dc4Fe6Hg8Jk0Ml2Nn4Pp6"


def _pasted_transcript(stray: str = "\ud800") -> Any:
    """A key in a user turn and a tool result; ``stray`` (a lone surrogate by default) in a message and a tool id."""
    from lab.core.messages import Transcript
    from tests.builders import call_and_result, system, user

    return Transcript(messages=[system(), user(f"use {PASTED} {stray}"), *call_and_result("Bash", f"KEY={PASTED}\n", tool_id=f"t{stray}", command="env")])


def _pasted_page(page: str) -> None:
    import runpy

    from lab.ui.transcript import get_transcript, set_transcript
    from tests.app.test_export import _pasted_transcript

    if get_transcript() is None:
        # The app's transcripts come through the readers, which have already replaced lone surrogates.
        set_transcript(_pasted_transcript(stray=""), "pasted")
    runpy.run_path(page, run_name="__main__")


class TestPastedSecrets:
    @pytest.mark.parametrize("shape", ["anthropic", "openai"])
    def test_request_and_report_files_are_redacted_valid_utf8(self, shape: str) -> None:
        report = replay(_pasted_transcript(), "minicode", retention_each=True)
        k = len(report.rows) - 1
        for file in (export.transcript_file(report, k, shape), export.report_file(report)):  # type: ignore[arg-type]
            text = file.data.decode("utf-8")  # strict: no lone surrogate reached the bytes
            assert PASTED not in text and "[REDACTED:anthropic-key]" in text and "\ufffd" in text and json.loads(text)
            assert file.notes and file.notes[0].startswith("redacted 1 secret (anthropic-key 1)")
        kept = export.transcript_file(report, k, shape, redact=False)  # type: ignore[arg-type]
        assert PASTED in kept.data.decode("utf-8") and kept.notes == ()

    def test_the_page_says_what_it_redacted(self, downloads: dict[str, tuple[str | None, bytes]]) -> None:
        at = AppTest.from_function(_pasted_page, default_timeout=TIMEOUT, kwargs={"page": PAGE}).run()
        assert not at.exception and not at.error
        assert any(c.value.startswith("Request file: redacted 1 secret (anthropic-key 1)") for c in at.caption)
        assert all(PASTED.encode() not in data for data in payloads(at, downloads).values())


class TestLabel:
    """The exported config's label says whether it is still its preset, under a name the user can set (issue 31, item 11)."""

    def test_the_preset_unchanged_is_labelled_as_the_preset(self) -> None:
        assert export.export_label("minicode", []) == "minicode"

    def test_changed_values_are_said_in_the_label(self) -> None:
        cfg = with_values(preset("minicode"), {"window": 64_000, "watermark.ratio": 0.7, "spill.threshold": 9000})
        changed = export.changed_from(cfg, preset("minicode"))
        assert changed == ["spill.threshold", "watermark.ratio", "window"]
        assert export.export_label("minicode", changed) == "minicode, changed (3 values)"

    def test_a_users_own_label_is_kept(self) -> None:
        assert export.export_label("minicode", ["window"], "my-agent") == "my-agent"
        assert export.export_label("minicode", ["window"], "mewcode") == "minicode, changed (1 value)"

    def test_labelled_sets_the_name_and_an_empty_one_keeps_the_configs(self) -> None:
        cfg = preset("minicode")
        assert export.labelled(cfg, "  tuned   for  CI ").label == "tuned for CI"
        assert export.labelled(cfg, "   ").label == "minicode"
        assert cfg.label == "minicode", "a copy: the active config is left as it is"

    def test_the_page_labels_a_changed_config_and_takes_a_name(self, downloads: dict[str, tuple[str | None, bytes]]) -> None:
        at = page_test().run()
        assert json.loads(payloads(at, downloads)["lab.export.config.json"])["label"] == "minicode"
        cfg = with_value(preset("minicode"), "watermark.ratio", 0.7)
        at.session_state["lab.config"] = cfg
        at.run()
        assert not at.exception
        assert json.loads(payloads(at, downloads)["lab.export.config.json"])["label"] == "minicode, changed (1 value)"
        assert any("Changed from the minicode preset: watermark.ratio" in c.value for c in at.caption)
        box = next(t for t in at.text_input if str(t.key).startswith("lab.export.label"))
        box.set_value("ci-agent").run()
        assert json.loads(payloads(at, downloads)["lab.export.config.json"])["label"] == "ci-agent"
        assert load_config(payloads(at, downloads)["lab.export.config.toml"], "toml").label == "ci-agent"
