"""lab.atomic: writes never crash on lone surrogates, redact secrets, and clean up after killed writers."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import lab.atomic as atomic
from lab.atomic import atomic_path, atomic_writer, file_digest, redaction, redacting, remove_stale_temps, write_table, write_text_atomic

# Built from pieces, so the test file holds no string a secret scanner would flag.
KEY = "sk-" + "ant-api03-" + "Q8x2Lm4Np6Rt8Vx0Zb2Dc4Fe6Hg8Jk0Ml2Nn4Pp6"
AWS = "AKIA" + "IOSFODNN7EXAMPL1"


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=30)
    return proc.pid


class TestSurrogates:
    def test_text_writer_replaces_lone_surrogates(self, tmp_path: Path) -> None:
        text = json.dumps({"id": "toolu_\ud800", "out": "a\udfffb\udc80"}, ensure_ascii=False)
        path = write_text_atomic(tmp_path / "x.json", text)
        data = path.read_bytes().decode("utf-8")  # strict: valid UTF-8 or this raises
        assert json.loads(data) == {"id": "toolu_\ufffd", "out": "a\ufffdb\ufffd"}

    def test_streamed_writer_and_csv(self, tmp_path: Path) -> None:
        with atomic_writer(tmp_path / "x.jsonl") as fh:
            fh.write("one \ud800\n")
            fh.write("two\n")
        assert (tmp_path / "x.jsonl").read_bytes().decode("utf-8") == "one \ufffd\ntwo\n"
        frame = pd.DataFrame({"name": pd.Series(["ok", "caf\u00e9"], dtype=object), "n": [1, 2]})
        write_table(frame, lambda: {}, tmp_path / "t.csv", "table")
        assert pd.read_csv(tmp_path / "t.csv")["name"].tolist() == ["ok", "caf\u00e9"]

    def test_valid_pairs_and_astral_characters_are_kept(self, tmp_path: Path) -> None:
        text = "emoji \U0001f600 and CJK \u4e2d"
        assert write_text_atomic(tmp_path / "a.txt", text).read_text(encoding="utf-8") == text


class TestRedaction:
    def test_writes_redact_by_default(self, tmp_path: Path) -> None:
        assert redacting()
        write_text_atomic(tmp_path / "a.txt", f"key={KEY}")
        assert (tmp_path / "a.txt").read_text(encoding="utf-8") == "key=[REDACTED:anthropic-key]"

    def test_scope_counts_every_write_and_can_turn_it_off(self, tmp_path: Path) -> None:
        with redaction() as tally:
            write_text_atomic(tmp_path / "a.txt", f"{KEY} {AWS}")
            with atomic_writer(tmp_path / "b.txt") as fh:
                fh.write(f"{KEY}\n")
            write_table(pd.DataFrame({"k": [AWS]}), lambda: {}, tmp_path / "t.parquet", "table")
        assert tally.distinct == {"anthropic-key": 1, "aws-access-key": 1} and sum(tally.places.values()) == 4
        assert AWS not in pd.read_parquet(tmp_path / "t.parquet")["k"].tolist()[0]
        with redaction(False) as kept:
            assert not redacting()
            write_text_atomic(tmp_path / "c.txt", KEY)
        assert (tmp_path / "c.txt").read_text(encoding="utf-8") == KEY and not kept
        assert redacting()  # the scope ended

    def test_digest_is_of_the_bytes_on_disk(self, tmp_path: Path) -> None:
        with atomic_writer(tmp_path / "d.txt") as fh:
            fh.write(f"x \ud800 {KEY}\n")
            digest = file_digest(fh)
        assert digest == hashlib.sha256((tmp_path / "d.txt").read_bytes()).hexdigest()


class TestStaleTemps:
    def test_temps_of_dead_writers_and_old_ones_go(self, tmp_path: Path) -> None:
        target = tmp_path / "report.json"
        host = atomic._HOST
        other = "0" * 6 if host != "0" * 6 else "1" * 6
        dead = tmp_path / f".report.json.{_dead_pid()}-{host}-aaaaaaaa.tmp"
        live = tmp_path / f".report.json.{os.getpid()}-{host}-bbbbbbbb.tmp"
        foreign = tmp_path / f".report.json.{_dead_pid()}-{other}-cccccccc.tmp"
        legacy = tmp_path / ".report.json.0123abcd.tmp"
        old_legacy = tmp_path / ".report.json.89abcdef.tmp"
        # A dump a killed run was writing under another name goes too; a file not of this form stays.
        other_name = tmp_path / f".requests.jsonl.{_dead_pid()}-{host}-dddddddd.tmp"
        unrelated = tmp_path / ".other.json.1-aaaaaa-dd.tmp"
        for p in (dead, live, foreign, legacy, old_legacy, other_name, unrelated):
            p.write_text("half", encoding="utf-8")
        os.utime(old_legacy, (1000.0, 1000.0))
        write_text_atomic(target, "{}")
        left = {p.name for p in tmp_path.iterdir()}
        # Another host's pid cannot be asked about, and a recent name without a pid may be a writer at work.
        assert left == {"report.json", live.name, foreign.name, legacy.name, unrelated.name}
        assert remove_stale_temps(target, now=os.stat(foreign).st_mtime + atomic.STALE_AFTER + 1) == 3

    def test_temp_name_names_this_process(self, tmp_path: Path) -> None:
        with atomic_path(tmp_path / "x.json") as tmp:
            assert tmp.name.startswith(f".x.json.{os.getpid()}-{atomic._HOST}-") and tmp.name.endswith(".tmp")
            tmp.write_text("{}", encoding="utf-8")
        assert [p.name for p in tmp_path.iterdir()] == ["x.json"]

    def test_interrupted_write_leaves_nothing(self, tmp_path: Path) -> None:
        with pytest.raises(KeyboardInterrupt), atomic_writer(tmp_path / "y.jsonl") as fh:
            fh.write("partial\n")
            raise KeyboardInterrupt
        assert list(tmp_path.iterdir()) == []


def test_all_is_complete() -> None:
    public = {n for n, v in vars(atomic).items() if not n.startswith("_") and getattr(v, "__module__", None) == atomic.__name__}
    assert public <= set(atomic.__all__)
