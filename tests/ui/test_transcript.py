"""The app's sample list: sample_sessions/ first, then the files of LAB_CORPUS as ``corpus/<path>``."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.errors import TranscriptError
from lab.ui import transcript


def _corpus(root: Path) -> Path:
    for name in ("claude-code/a.jsonl", "codex/b.jsonl", "SOURCES.md"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("{}\n")
    return root


def test_without_a_corpus_only_the_samples_are_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAB_CORPUS", raising=False)
    names = transcript.sample_files()
    assert names[0] == transcript.DEFAULT_SAMPLE
    assert names and not any(n.startswith("corpus/") for n in names)


def test_corpus_files_follow_the_samples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAB_CORPUS", raising=False)
    samples = transcript.sample_files()
    monkeypatch.setenv("LAB_CORPUS", str(_corpus(tmp_path)))
    assert transcript.sample_files() == [*samples, "corpus/claude-code/a.jsonl", "corpus/codex/b.jsonl"]


@pytest.mark.parametrize("name", ["corpus/../claude-code/a.jsonl", "../README.md", "corpus/SOURCES.md", "/etc/passwd"])
def test_only_listed_names_load(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Names come back from the browser: one not in the list is refused before any file is read.
    monkeypatch.setenv("LAB_CORPUS", str(_corpus(tmp_path)))
    with pytest.raises(TranscriptError, match="not a sample session"):
        transcript.load_sample(name)


def test_a_corpus_session_kept_as_a_folder_is_listed_once_and_keyed_by_its_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from lab.views.files import import_file

    root = _corpus(tmp_path / "corpus")
    task = root / "cline" / "1750000000"
    shutil.copytree(Path(__file__).parents[1] / "formats" / "fixtures" / "cline" / "task", task)
    monkeypatch.setenv("LAB_CORPUS", str(root))
    assert "corpus/cline/1750000000" in transcript.sample_files()
    assert not any(n.startswith("corpus/cline/1750000000/") for n in transcript.sample_files())
    assert import_file(task)[1] == "cline"
    before = transcript._content_digest(task)
    assert transcript._content_digest(task) == before
    (task / "ui_messages.json").write_text((task / "ui_messages.json").read_text() + " ")
    assert transcript._content_digest(task) != before
