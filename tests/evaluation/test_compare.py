"""compare and compare_folder: table columns, labels, the process pool, errors and the file formats."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from lab.core.presets import preset
from lab.errors import ConfigError, LabError
from lab.generator import GeneratorConfig, generate, write_lab_json
from lab.evaluation import CompareTable, compare, compare_folder
from lab.evaluation.batch import folder_files, read_batch
from lab.evaluation.rows import BASE_COLUMNS
from tests.builders import session

PRESETS = ["minicode", "mewcode"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    for seed in (1, 2):
        knobs = GeneratorConfig(seed=seed, requests=12, typical_output_chars=800, max_output_chars=6000, huge_output_rate=0.0)
        write_lab_json(generate(knobs), root / f"gen-{seed}.lab.json")
    (root / "sub").mkdir()
    (root / "sub" / "broken.json").write_text('{"lab_transcript": 1, "messages": [{"role": "robot"}]}', encoding="utf-8")
    (root / "README.md").write_text("not a transcript", encoding="utf-8")
    (root / ".hidden.json").write_text("{}", encoding="utf-8")
    return root


class TestCompare:
    def test_one_row_per_config_with_the_columns(self) -> None:
        table = compare(session(8, 5000), ["minicode", ("small mew", preset("mewcode")), preset("codex")], window=16_000)
        assert [r["config"] for r in table.rows] == ["minicode", "small mew", "codex"]
        assert table.columns[: len(BASE_COLUMNS)] == BASE_COLUMNS
        for row in table.records():
            for col in ("peak_sent", "requests_over_watermark", "compactions", "summary_calls", "invalid_requests",
                        "retention_score", "cost", "cache_hit_ratio"):
                assert row[col] is not None, col
            assert row["window"] == 16_000
        # Per-strategy counts are flat columns, 0 where a config never used the strategy.
        assert "compactions_tool_budget" in table.columns
        assert table.records()[1]["compactions_tool_budget"] == 0
        assert set(table.reports) == {"minicode", "small mew", "codex"}
        assert table.reports["minicode"].peak_sent == table.rows[0]["peak_sent"]

    def test_duplicate_labels_are_told_apart(self) -> None:
        table = compare(session(2, 100), ["minicode", "minicode"])
        assert [r["config"] for r in table.rows] == ["minicode", "minicode#2"]

    @pytest.mark.parametrize("configs", [[], ["nope"], [("label",)]], ids=["none", "unknown", "bad-tuple"])
    def test_bad_configs(self, configs: list) -> None:
        with pytest.raises(ConfigError):
            compare(session(2, 100), configs)


class TestFolder:
    def test_two_processes_one_row_per_transcript_and_config(self, folder: Path) -> None:
        table = compare_folder(folder, PRESETS, processes=2, window=16_000)
        assert [(r["transcript"], r["config"]) for r in table.rows] == [
            ("gen-1.lab.json", "minicode"), ("gen-1.lab.json", "mewcode"), ("gen-2.lab.json", "minicode"), ("gen-2.lab.json", "mewcode"),
        ]
        assert all(r["requests"] == 12 and r["invalid_requests"] == 0 for r in table.rows)
        # The unreadable file is reported once per config, not a crash; notes and hidden files are skipped.
        assert [(e["transcript"], e["config"]) for e in table.errors] == [("sub/broken.json", "minicode"), ("sub/broken.json", "mewcode")]
        assert all("broken.json" in e["error"] for e in table.errors)

    def test_in_process_mode_gives_the_same_table(self, folder: Path) -> None:
        pooled = compare_folder(folder, PRESETS, processes=2, window=16_000)
        local = compare_folder(folder, PRESETS, processes=1, window=16_000)
        strip = lambda t: [{k: v for k, v in r.items() if k != "replay_seconds"} for r in t.records()]  # noqa: E731
        assert strip(pooled) == strip(local)
        assert pooled.errors == local.errors

    def test_each_file_is_read_once_and_progress_counts_jobs(self, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        import lab.evaluation.batch as batch_module

        read: list[str] = []
        real = batch_module.as_transcript
        monkeypatch.setattr(batch_module, "as_transcript", lambda source: read.append(str(source)) or real(source))
        seen: list[tuple[int, int]] = []
        table = compare_folder(folder, PRESETS + ["codex"], processes=2, window=16_000, progress=lambda done, total: seen.append((done, total)))
        # Three configs, but every file (the broken one too) is read once, here, not once per job in a worker.
        assert sorted(Path(p).name for p in read) == ["broken.json", "gen-1.lab.json", "gen-2.lab.json"]
        assert len(table.rows) == 6 and len(table.errors) == 3
        assert seen[-1] == (6, 6)

    def test_writes_csv_json_and_parquet(self, folder: Path, tmp_path: Path) -> None:
        table = compare_folder([folder / "gen-1.lab.json", folder / "gen-2.lab.json"], PRESETS, processes=1)
        csv = pd.read_csv(table.write(tmp_path / "t.csv"))
        assert list(csv.columns) == table.columns and len(csv) == 4
        assert csv["peak_sent"].tolist() == [r["peak_sent"] for r in table.rows]
        data = json.loads(table.write(tmp_path / "t.json").read_text(encoding="utf-8"))
        assert data["columns"] == table.columns and len(data["rows"]) == 4 and data["errors"] == []
        parquet = pd.read_parquet(table.write(tmp_path / "t.parquet"))
        assert parquet["config"].tolist() == ["minicode", "mewcode"] * 2

    def test_bad_extension_and_missing_folder(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match="csv"):
            CompareTable().write(tmp_path / "t.xlsx")
        with pytest.raises(LabError, match="no such"):
            compare_folder(tmp_path / "nope", PRESETS)
        with pytest.raises(ConfigError, match="processes"):
            compare_folder(tmp_path, PRESETS, processes=0)


def test_an_openhands_v1_conversation_folder_counts_as_one_transcript(tmp_path: Path) -> None:
    events = [
        {"kind": "SystemPromptEvent", "id": "e1", "source": "agent", "system_prompt": {"type": "text", "text": "You are an agent"}, "tools": []},
        {"kind": "MessageEvent", "id": "e2", "source": "user", "llm_message": {"role": "user", "content": [{"type": "text", "text": "fix it"}]}},
        {"kind": "MessageEvent", "id": "e3", "source": "agent", "llm_message": {"role": "assistant", "content": [{"type": "text", "text": "done"}]}},
    ]
    conv = tmp_path / "conversations" / "abc"
    (conv / "events").mkdir(parents=True)
    (conv / "base_state.json").write_text("{}", encoding="utf-8")
    for i, ev in enumerate(events):
        (conv / "events" / f"event-{i:05d}-{ev['id']}.json").write_text(json.dumps(ev), encoding="utf-8")
    write_lab_json(generate(GeneratorConfig(seed=1, requests=4)), tmp_path / "other.lab.json")
    assert folder_files(tmp_path) == [conv, tmp_path / "other.lab.json"]
    table = compare_folder(tmp_path, ["mewcode"], processes=1, window=32_000)
    assert not table.errors and sorted(r["transcript"] for r in table.rows) == ["conversations/abc", "other.lab.json"]


def test_a_cline_task_folder_counts_as_one_transcript_and_links_are_not_followed(tmp_path: Path) -> None:
    import shutil

    task = tmp_path / "tasks" / "1712345678901"
    shutil.copytree(Path(__file__).parents[1] / "formats" / "fixtures" / "cline" / "task", task)
    outside = tmp_path.parent / f"{tmp_path.name}-outside.lab.json"
    write_lab_json(generate(GeneratorConfig(seed=2, requests=3)), outside)
    (tmp_path / "link.lab.json").symlink_to(outside)
    (tmp_path / "broken.json").write_text("{not json", encoding="utf-8")
    # The task's three files are one Cline session; a file no format reads stays listed, to fail loudly.
    assert folder_files(tmp_path) == [tmp_path / "broken.json", task]
    table = compare_folder(tmp_path, ["mewcode"], processes=1, window=32_000)
    assert [r["transcript"] for r in table.rows] == ["tasks/1712345678901"]
    assert [e["transcript"] for e in table.errors] == ["broken.json"]


class TestSeveralSessionsInOneFile:
    """A file or store that holds several sessions is a batch of them, each its own transcript."""

    def test_every_record_of_an_evaluation_output_is_compared_and_a_bad_one_is_its_own_error(self, tmp_path: Path) -> None:
        from tests.formats.test_sessions import _output, _record

        # b-2's only event is none OpenHands writes: a record that reads as no transcript; e-4 ran no event.
        bad, empty = {"instance_id": "b-2", "history": [{"weird": 1}]}, {"instance_id": "e-4", "history": []}
        _output(tmp_path, [_record("a-1", "fix a"), bad, empty, _record("c-3", "fix c")])
        table = compare_folder(tmp_path, ["minicode"], processes=1)
        assert [r["transcript"] for r in table.rows] == ["output.jsonl [a-1]", "output.jsonl [c-3]"]
        assert [(e["transcript"], e["config"]) for e in table.errors] == [("output.jsonl [b-2]", "minicode")]
        assert "no messages" in table.errors[0]["error"]
        assert len(table.notes) == 1 and table.notes[0].startswith("output.jsonl holds 3 sessions (an OpenHands evaluation output.jsonl)")
        assert table.notes[0].endswith("left out: 1 empty session(s)")
        assert table.to_dict()["notes"] == table.notes
        # --session still compares that one alone.
        alone = compare_folder(tmp_path / "output.jsonl", ["minicode"], processes=1, session="c-3")
        assert [r["transcript"] for r in alone.rows] == ["output.jsonl [c-3]"] and alone.notes == []

    def test_an_aider_history_gives_each_session_read_once(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        import shutil

        from lab.formats.editors import aider

        shutil.copyfile(Path(__file__).parents[1] / "formats" / "fixtures" / "aider" / ".aider.chat.history.md", tmp_path / "chat.md.history")
        parses: list[int] = []
        real = aider.parse_chat_history
        monkeypatch.setattr(aider, "parse_chat_history", lambda text: parses.append(1) or real(text))
        batch = read_batch(tmp_path)
        assert [(name, error) for name, _, error in batch.items] == [("chat.md.history [0]", None), ("chat.md.history [1]", None)]
        # Listed once, read once: never once per session.
        assert len(parses) == 2
        first, second = (t for _, t, _ in batch.items)
        assert first is not None and second is not None and first.messages != second.messages

    def test_a_store_leaves_sub_agents_and_empty_sessions_out(self, tmp_path: Path) -> None:
        from tests.formats.test_goose_db import _three

        _three(tmp_path)
        batch = read_batch(tmp_path)
        assert [name for name, _, _ in batch.items] == ["sessions.db [20260101_1]", "sessions.db [20260102_1]"]
        assert batch.notes[0].endswith("left out: 1 sub-agent session(s) and 1 empty session(s)")

    def test_an_opencode_database_leaves_its_subagent_sessions_out(self, tmp_path: Path) -> None:
        from tests.formats.test_opencode_storage import DOC, SID, _database, _other

        _database(tmp_path / "opencode.db", [DOC, _other("ses_two", 1767000000000), _other("ses_sub", 1767100000000, parent=SID)])
        batch = read_batch(tmp_path)
        assert sorted(name for name, _, _ in batch.items) == sorted(f"opencode.db [{sid}]" for sid in (SID, "ses_two"))
        assert batch.notes[0].endswith("left out: 1 sub-agent session(s)")

    def test_a_one_session_file_is_read_as_before(self, folder: Path) -> None:
        batch = read_batch(folder)
        assert [name for name, _, _ in batch.items] == ["gen-1.lab.json", "gen-2.lab.json", "sub/broken.json"] and batch.notes == []

    def test_a_sweep_reads_the_same_batch(self, tmp_path: Path) -> None:
        from lab.tuning.study import load_transcripts
        from tests.formats.test_sessions import _output, _record

        _output(tmp_path, [_record("a-1", "fix a"), _record("c-3", "fix c")])
        transcripts, names, skipped = load_transcripts(tmp_path)
        assert names == ["output.jsonl [a-1]", "output.jsonl [c-3]"] and skipped == [] and len(transcripts) == 2
