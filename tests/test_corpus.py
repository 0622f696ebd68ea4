"""lab.corpus and the tests' use of it: LAB_CORPUS names the folder; without one, skip with a reason or fail."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lab.corpus import CORPUS_ENV, corpus_dir, corpus_files
from tests.conftest import ROOT

FIXTURES = ROOT / "tests" / "formats" / "fixtures"

PROBE = '''
import pytest
from tests.conftest import CORPUS_FILES, corpus_file

@pytest.mark.parametrize("path", CORPUS_FILES)
def test_each(path):
    assert path.is_file()

def test_body():
    assert corpus_file("a/x.jsonl").is_file()

@pytest.mark.corpus("a/x.jsonl")
def test_marked():
    pass
'''


def _corpus(root: Path, *names: str) -> Path:
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("{}\n")
    return root


class TestCorpusDir:
    def test_unset_or_blank_is_no_corpus(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv(CORPUS_ENV, raising=False)
        assert corpus_dir() is None
        monkeypatch.setenv(CORPUS_ENV, "  ")
        assert corpus_dir() is None

    def test_relative_is_resolved_against_the_working_directory(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv(CORPUS_ENV, "sub/../corpus")
        assert corpus_dir() == (tmp_path / "corpus").resolve()


class TestCorpusFiles:
    def test_transcripts_at_any_depth_without_docs_or_hidden_files(self, tmp_path: Path) -> None:
        root = _corpus(tmp_path, "a/x.jsonl", "b/c/y.traj", "SOURCES.md", "a/README.MD", ".DS_Store", "a/.x.jsonl.1a2b.tmp", ".git/HEAD")
        assert corpus_files(root) == [root / "a/x.jsonl", root / "b/c/y.traj"]

    def test_missing_folder_is_empty(self, tmp_path: Path) -> None:
        assert corpus_files(tmp_path / "nowhere") == []

    def test_a_session_kept_as_a_folder_is_one_transcript_and_links_are_not_followed(self, tmp_path: Path) -> None:
        # A Cline task is three files the cline reader reads as one session, as `python -m lab sessions` lists it.
        task = tmp_path / "cline" / "1750000000"
        shutil.copytree(FIXTURES / "cline" / "task", task)
        root = _corpus(tmp_path, "a/x.jsonl")
        (root / "link.jsonl").symlink_to(root / "a/x.jsonl")
        assert corpus_files(root) == [root / "a/x.jsonl", task]


def _probe(tmp_path: Path, corpus: Path | None, required: bool) -> subprocess.CompletedProcess[str]:
    test = tmp_path / "probe" / "test_probe.py"
    test.parent.mkdir(exist_ok=True)
    test.write_text(PROBE)
    env = {k: v for k, v in os.environ.items() if k not in (CORPUS_ENV, "LAB_REQUIRE_CORPUS")}
    if corpus is not None:
        env[CORPUS_ENV] = str(corpus)
    if required:
        env["LAB_REQUIRE_CORPUS"] = "1"
    cmd = [sys.executable, "-m", "pytest", "-q", "-rsfE", "-p", "no:cacheprovider", "-p", "tests.conftest", "--rootdir", str(ROOT), str(test)]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


class TestTheTestsCorpus:
    def test_without_a_corpus_each_test_is_a_visible_skip_with_the_reason(self, tmp_path: Path) -> None:
        proc = _probe(tmp_path, None, required=False)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "3 skipped" in proc.stdout
        skips = [line for line in proc.stdout.splitlines() if line.startswith("SKIPPED")]
        assert skips and all(line.endswith("no corpus: set LAB_CORPUS to a folder of transcripts") for line in skips)
        assert "empty parameter set" not in proc.stdout

    def test_required_and_missing_fails_every_one(self, tmp_path: Path) -> None:
        proc = _probe(tmp_path, None, required=True)
        assert proc.returncode == 1
        # The marked and parametrized tests fail at setup (reported as errors), corpus_file() in the body.
        assert "1 failed, 2 errors" in proc.stdout
        summary = [line for line in proc.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
        assert len(summary) == 3 and all("no corpus" in line for line in summary)

    def test_a_corpus_folder_is_read_wherever_it_is(self, tmp_path: Path) -> None:
        root = _corpus(tmp_path / "mine", "a/x.jsonl", "SOURCES.md")
        proc = _probe(tmp_path, root, required=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "3 passed" in proc.stdout

    def test_a_missing_file_skips_or_fails_by_name(self, tmp_path: Path) -> None:
        root = _corpus(tmp_path / "other", "b/y.jsonl")
        skipped = _probe(tmp_path, root, required=False)
        assert skipped.returncode == 0 and "1 passed, 2 skipped" in skipped.stdout
        skips = [line for line in skipped.stdout.splitlines() if line.startswith("SKIPPED")]
        assert skips and all("a/x.jsonl is not in the corpus" in line for line in skips)
        failed = _probe(tmp_path, root, required=True)
        assert failed.returncode == 1 and "1 failed, 1 passed, 1 error" in failed.stdout
