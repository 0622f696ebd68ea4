"""One transcript file compressed (zstd, gzip, bzip2, xz): read as the file it holds, and every damaged or hostile stream one clear error.

The compressed files are made here at run time from small hand-made sessions (a Codex rollout,
a Claude Code JSONL), with ``zstandard`` and the stdlib, as Codex and ``gzip`` write them.
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import zstandard

from lab.cli.main import main
from lab.errors import TranscriptError
from lab.formats.containers import archive, compressed
from lab.formats import load
from lab.views import files
from tests.formats.test_claude_code import _result, _use, _user
from tests.formats.test_codex_rollouts import call, meta, msg, output
from tests.formats.test_openhands_v1 import TestConversationFolder

_COMPRESS: dict[str, Callable[[bytes], bytes]] = {
    "zst": lambda b: zstandard.ZstdCompressor().compress(b),
    "gz": gzip.compress,
    "bz2": bz2.compress,
    "xz": lzma.compress,
}


def _jsonl(records: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode("utf-8")


def _rollout() -> bytes:
    return _jsonl([
        meta(),
        msg("user", "List the files, please."),
        call("c1"),
        output("c1", "a.py\nb.py"),
        msg("assistant", "There are two: a.py and b.py.", part="output_text"),
    ])


def _claude_code() -> bytes:
    return _jsonl([_user("Read a.py"), _use("t1", "msg_1"), _result("t1", "print('hi')")])


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _zstd_streamed(data: bytes) -> bytes:
    """As a streaming writer (Codex's) leaves it: frames without a content size, here two of them."""
    out = io.BytesIO()
    with zstandard.ZstdCompressor().stream_writer(out, closefd=False) as w:
        w.write(data[: len(data) // 2])
        w.flush(zstandard.FLUSH_FRAME)
        w.write(data[len(data) // 2 :])
    return out.getvalue()


# --- read as the file it holds ---------------------------------------------------------------------


class TestReadsTheInnerFile:
    def test_a_codex_rollout_zst_reads_as_the_plain_rollout(self, tmp_path: Path) -> None:
        plain = _write(tmp_path / "plain" / "rollout-2025-10-01T12-00-00-0199.jsonl", _rollout())
        packed = _write(tmp_path / "rollout-2025-10-01T12-00-00-0199.jsonl.zst", _COMPRESS["zst"](_rollout()))
        t, ref = load(packed), load(plain)
        assert t.meta.source_format == ref.meta.source_format == "openai_responses"
        assert t.messages == ref.messages and len(t.messages) >= 3
        # The temporary folder is gone and never named: the compressed file is.
        assert t.meta.source_path == str(packed)
        assert not any("lab-archive-" in w for w in t.notes.warnings)

    def test_a_streamed_multi_frame_zst_reads_whole(self, tmp_path: Path) -> None:
        packed = _write(tmp_path / "rollout.jsonl.zst", _zstd_streamed(_rollout()))
        assert load(packed).messages == load(_write(tmp_path / "p" / "rollout.jsonl", _rollout())).messages

    @pytest.mark.parametrize("suffix", ["gz", "bz2", "xz"])
    def test_a_compressed_claude_code_jsonl(self, tmp_path: Path, suffix: str) -> None:
        data = _claude_code()  # once: the builders number their entries
        plain = _write(tmp_path / "plain" / "session.jsonl", data)
        t = load(_write(tmp_path / f"session.jsonl.{suffix}", _COMPRESS[suffix](data)))
        assert t.meta.source_format == "claude_code"
        assert t.messages == load(plain).messages

    def test_found_by_its_bytes_not_its_suffix(self, tmp_path: Path) -> None:
        t = load(_write(tmp_path / "download", gzip.compress(_claude_code())))
        assert t.meta.source_format == "claude_code"

    def test_a_forced_format_applies_to_the_inner_file(self, tmp_path: Path) -> None:
        packed = _write(tmp_path / "s.jsonl.gz", gzip.compress(_claude_code()))
        assert load(packed, format="claude_code").meta.source_format == "claude_code"
        with pytest.raises(TranscriptError) as err:
            load(packed, format="gemini")
        assert str(err.value).startswith(str(packed))

    def test_a_tar_gz_is_still_a_folder_archive(self, tmp_path: Path) -> None:
        conv = TestConversationFolder()._folder(tmp_path / "src")
        tarred = tmp_path / "conv.tar.gz"
        with tarfile.open(tarred, "w:gz") as tf:
            tf.add(conv, arcname=conv.name)
        assert archive._kind(tarred) == "tar"
        assert load(tarred).messages == load(conv).messages

    def test_a_tar_zst_is_a_folder_archive_too(self, tmp_path: Path) -> None:
        conv = TestConversationFolder()._folder(tmp_path / "src")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tf:
            tf.add(conv, arcname=conv.name)
        packed = _write(tmp_path / "conv.tar.zst", _COMPRESS["zst"](buf.getvalue()))
        assert archive._kind(packed) == "tar"
        assert load(packed).messages == load(conv).messages


class TestInnerName:
    @pytest.mark.parametrize(
        ("given", "inner"),
        [
            ("rollout-x.jsonl.zst", "rollout-x.jsonl"),
            ("session.jsonl.GZ", "session.jsonl"),
            ("log.bz2", "log"),
            ("no-suffix", "no-suffix"),
            (".zst", ".zst"),
            ("a\nb:c.jsonl.xz", "a_b_c.jsonl"),
            ("...gz", "transcript"),
        ],
    )
    def test_the_inner_name(self, given: str, inner: str) -> None:
        assert compressed.inner_name(Path(given)) == inner

    def test_detection_sees_the_inner_name(self, tmp_path: Path) -> None:
        packed = _write(tmp_path / "rollout-x.jsonl.zst", _COMPRESS["zst"](_rollout()))
        out = tmp_path / "out"
        out.mkdir()
        assert compressed.decompress(packed, out, max_bytes=1 << 20) == out / "rollout-x.jsonl"
        assert (out / "rollout-x.jsonl").read_bytes() == _rollout()


# --- damaged and hostile streams -------------------------------------------------------------------


class TestRefused:
    def test_a_truncated_zst_names_the_users_file(self, tmp_path: Path) -> None:
        data = _COMPRESS["zst"](_rollout() * 20)
        packed = _write(tmp_path / "rollout.jsonl.zst", data[: len(data) // 2])
        with pytest.raises(TranscriptError, match="truncated") as err:
            load(packed)
        assert err.value.file == str(packed)
        assert "lab-archive-" not in str(err.value) and "\n" not in str(err.value)

    def test_a_truncated_streamed_zst(self, tmp_path: Path) -> None:
        data = _zstd_streamed(_rollout())
        with pytest.raises(TranscriptError, match="truncated"):
            load(_write(tmp_path / "r.jsonl.zst", data[:-3]))

    @pytest.mark.parametrize("suffix", ["gz", "bz2", "xz"])
    def test_a_truncated_stdlib_stream(self, tmp_path: Path, suffix: str) -> None:
        data = _COMPRESS[suffix](_claude_code() * 50)
        packed = _write(tmp_path / f"s.jsonl.{suffix}", data[: len(data) // 2])
        with pytest.raises(TranscriptError, match="cannot decompress") as err:
            load(packed)
        assert err.value.file == str(packed)

    @pytest.mark.parametrize(
        "data",
        [b"\x28\xb5\x2f\xfd" + b"\xff" * 40, b"\x1f\x8b\x08\x00" + b"\x00" * 40, b"BZh9" + b"\x00" * 40, b"\xfd7zXZ\x00" + b"\x01" * 40],
        ids=["zstd", "gzip", "bzip2", "xz"],
    )
    def test_garbage_after_the_magic(self, tmp_path: Path, data: bytes) -> None:
        bad = _write(tmp_path / "bad.jsonl.x", data)
        with pytest.raises(TranscriptError, match="cannot decompress") as err:
            load(bad)
        assert str(err.value).startswith(str(bad)) and "\n" not in str(err.value)

    @pytest.mark.parametrize("suffix", ["zst", "gz"])
    def test_a_bomb_stops_at_the_limit_and_leaves_nothing(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str) -> None:
        monkeypatch.setattr(archive, "MAX_UNPACKED_BYTES", 1 << 20)
        bomb = _write(tmp_path / f"bomb.jsonl.{suffix}", _COMPRESS[suffix](b"\0" * (8 << 20)))
        assert bomb.stat().st_size < 64 << 10
        with pytest.raises(TranscriptError, match="more than 1 MiB") as err:
            load(bomb)
        assert err.value.file == str(bomb)

    def test_a_bomb_unpacked_to_a_folder_leaves_it_empty(self, tmp_path: Path) -> None:
        bomb = _write(tmp_path / "bomb.zst", _COMPRESS["zst"](b"\0" * (4 << 20)))
        with pytest.raises(TranscriptError, match="more than 1 MiB"):
            archive.unpack(bomb, tmp_path / "out", max_bytes=1 << 20)
        assert list((tmp_path / "out").iterdir()) == []

    @pytest.mark.parametrize(
        "inner",
        [b"\xff\xfe\x00garbage \x80\x81 not utf-8\n" * 10, b"just some notes, no transcript\n", b""],
        ids=["not-utf8", "not-a-transcript", "empty"],
    )
    def test_content_that_is_no_transcript(self, tmp_path: Path, inner: bytes) -> None:
        packed = _write(tmp_path / "notes.txt.zst", _COMPRESS["zst"](inner))
        with pytest.raises(TranscriptError) as err:
            load(packed)
        assert str(err.value).startswith(str(packed)) and "lab-archive-" not in str(err.value)

    def test_a_compressed_archive_inside_is_not_unpacked_on(self, tmp_path: Path) -> None:
        twice = _write(tmp_path / "s.jsonl.gz.gz", gzip.compress(gzip.compress(_claude_code())))
        with pytest.raises(TranscriptError, match="an archive inside the archive"):
            load(twice)


# --- the command line and the app's upload ---------------------------------------------------------


def test_cli_imports_a_zst(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    packed = _write(tmp_path / "rollout.jsonl.zst", _COMPRESS["zst"](_rollout()))
    assert main(["import", str(packed), "--out", str(tmp_path / "t.lab.json")]) == 0
    assert "openai_responses" in capsys.readouterr().out
    assert load(tmp_path / "t.lab.json").messages == load(packed).messages


def test_cli_refuses_a_damaged_zst_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _COMPRESS["zst"](_rollout() * 20)
    packed = _write(tmp_path / "rollout.jsonl.zst", data[: len(data) // 2])
    assert main(["import", str(packed), "--out", str(tmp_path / "t.lab.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and str(packed) in err[0]
    assert not (tmp_path / "t.lab.json").exists()


class TestUpload:
    def test_an_uploaded_zst_reads_under_the_name_the_user_gave(self, tmp_path: Path) -> None:
        saved = files.save_upload(tmp_path / "uploads", "rollout-x.jsonl.zst", _COMPRESS["zst"](_rollout()))
        unpack_to = tmp_path / "unpacked"
        t, fmt, listed = files.import_upload(saved, shown_as="rollout-x.jsonl.zst", unpack_to=unpack_to)
        assert fmt == "openai_responses" and listed == []
        assert t.meta.source_path == "rollout-x.jsonl.zst"
        assert not unpack_to.exists()  # removed after the read

    def test_a_damaged_upload_names_the_users_file(self, tmp_path: Path) -> None:
        data = _COMPRESS["gz"](_claude_code() * 20)
        saved = files.save_upload(tmp_path / "uploads", "session.jsonl.gz", data[: len(data) // 2])
        with pytest.raises(TranscriptError) as err:
            files.import_upload(saved, shown_as="session.jsonl.gz", unpack_to=tmp_path / "unpacked")
        assert err.value.file == "session.jsonl.gz" and str(tmp_path) not in str(err.value)
