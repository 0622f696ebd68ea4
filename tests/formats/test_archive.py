"""Session folders packed as a .zip or tar: read as the folder, and every hostile archive refused before it writes."""

from __future__ import annotations

import io
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.cli.main import main
from lab.errors import TranscriptError
from lab.formats.containers import archive
from lab.formats import load
from tests.formats.test_opencode_storage import DOC, _other, _storage
from tests.formats.test_openhands_v1 import TestConversationFolder

CLINE_TASK = Path(__file__).parent / "fixtures" / "cline" / "task"


def _zip_folder(folder: Path, out: Path, top: str | None = None) -> Path:
    """``folder`` zipped as a file manager does: under its own name (``top``), or its contents at the root ('')."""
    prefix = folder.name if top is None else top
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for f in sorted(folder.rglob("*")):
            zf.write(f, str(Path(prefix) / f.relative_to(folder)) if prefix else str(f.relative_to(folder)))
    return out


def _tar_folder(folder: Path, out: Path, mode: str = "w:gz") -> Path:
    with tarfile.open(out, mode) as tf:
        tf.add(folder, arcname=folder.name)
    return out


def _zip(out: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return out


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


# --- what an archive holds, read as the folder ---------------------------------------------------


class TestReadsTheFolder:
    @pytest.mark.parametrize("top", [None, ""], ids=["under-its-folder", "contents-at-the-root"])
    def test_a_zipped_cline_task_folder_reads_as_the_folder(self, tmp_path: Path, top: str | None) -> None:
        t = load(_zip_folder(CLINE_TASK, tmp_path / "task.zip", top))
        ref = load(CLINE_TASK)
        assert t.messages == ref.messages and t.meta.source_format == "cline"
        # The temporary unpack folder is gone, and never named: the archive is.
        assert t.meta.source_path is not None and t.meta.source_path.startswith(str(tmp_path / "task.zip"))

    @pytest.mark.parametrize("mode", ["w:gz", "w", "w:xz"], ids=["tar.gz", "tar", "tar.xz"])
    def test_a_tarred_openhands_v1_conversation_reads_as_the_folder(self, tmp_path: Path, mode: str) -> None:
        conv = TestConversationFolder()._folder(tmp_path / "src")
        t = load(_tar_folder(conv, tmp_path / "conv.tar.gz", mode))
        ref = load(conv)
        assert t.messages == ref.messages and t.meta.source_format == "openhands_v1"

    def test_a_zipped_opencode_storage_folder_reads_the_newest_session_and_names_the_others_inside_the_archive(self, tmp_path: Path) -> None:
        root = _storage(tmp_path / "data")
        _storage(tmp_path / "data", _other("ses_older", DOC["info"]["time"]["updated"] - 5000))
        zipped = _zip_folder(root, tmp_path / "storage.zip")
        t = load(zipped)
        assert t.meta.session_id == DOC["info"]["id"] and t.messages == load(root).messages
        (several,) = [w for w in t.notes.warnings if "sessions in" in w]
        assert "ses_older" in several and str(zipped / "storage") in several
        assert "lab-archive-" not in " ".join(t.notes.warnings)

    def test_one_transcript_file_in_a_zip_reads_as_that_file(self, tmp_path: Path) -> None:
        history = CLINE_TASK / "api_conversation_history.json"
        zipped = _zip(tmp_path / "one.zip", {"api_conversation_history.json": history.read_bytes()})
        assert load(zipped).messages == load(history).messages

    def test_macos_resource_forks_are_no_second_folder(self, tmp_path: Path) -> None:
        zipped = _zip_folder(CLINE_TASK, tmp_path / "task.zip")
        with zipfile.ZipFile(zipped, "a") as zf:
            zf.writestr("__MACOSX/task/._ui_messages.json", b"\x00\x05\x16\x07")
            zf.writestr("task/.DS_Store", b"\x00\x00\x00\x01Bud1")
        assert load(zipped).meta.source_format == "cline"

    def test_unpack_returns_the_single_top_level_folder(self, tmp_path: Path) -> None:
        entry = archive.unpack(_zip_folder(CLINE_TASK, tmp_path / "task.zip"), tmp_path / "out")
        assert entry == tmp_path / "out" / "task"
        assert _files(entry) == {p.name for p in CLINE_TASK.iterdir()}

    def test_is_archive_reads_the_content_not_the_name(self, tmp_path: Path) -> None:
        zipped = _zip_folder(CLINE_TASK, tmp_path / "task.json")
        (tmp_path / "fake.zip").write_text("[]", encoding="utf-8")
        assert archive.is_archive(zipped) and not archive.is_archive(tmp_path / "fake.zip")
        assert not archive.is_archive(CLINE_TASK / "ui_messages.json") and not archive.is_archive(tmp_path)


# --- what is refused --------------------------------------------------------------------------------


def _symlink_zip(out: Path) -> Path:
    info = zipfile.ZipInfo("task/ui_messages.json")
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr(info, "/etc/passwd")
    return out


def _tar_with(out: Path, member: tarfile.TarInfo, data: bytes = b"") -> Path:
    with tarfile.open(out, "w:gz") as tf:
        tf.addfile(member, io.BytesIO(data) if data else None)
    return out


def _link(name: str, kind: bytes, target: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


HOSTILE = {
    "absolute": lambda p: _zip(p / "x.zip", {"/tmp/evil.json": b"[]"}),
    "dotdot": lambda p: _zip(p / "x.zip", {"task/../../evil.json": b"[]"}),
    "backslash-dotdot": lambda p: _zip(p / "x.zip", {"..\\evil.json": b"[]"}),
    "drive-letter": lambda p: _zip(p / "x.zip", {"C:/evil.json": b"[]"}),
    "control-character": lambda p: _zip(p / "x.zip", {"task/evil\n.json": b"[]"}),
    "zip-symlink": lambda p: _symlink_zip(p / "x.zip"),
    "tar-symlink": lambda p: _tar_with(p / "x.tar.gz", _link("task/ui_messages.json", tarfile.SYMTYPE, "/etc/passwd")),
    "tar-hardlink": lambda p: _tar_with(p / "x.tar.gz", _link("task/ui_messages.json", tarfile.LNKTYPE, "/etc/passwd")),
    "tar-dotdot": lambda p: _tar_with(p / "x.tar.gz", tarfile.TarInfo("../evil.json")),
    "tar-device": lambda p: _tar_with(p / "x.tar.gz", _link("task/dev", tarfile.CHRTYPE, "")),
}


class TestRefuses:
    @pytest.mark.parametrize("make", list(HOSTILE.values()), ids=list(HOSTILE))
    def test_a_hostile_member_is_refused_and_nothing_is_written(self, tmp_path: Path, make) -> None:  # noqa: ANN001 - a builder
        src = tmp_path / "src"
        src.mkdir()
        made = make(src)
        out = tmp_path / "out"
        with pytest.raises(TranscriptError, match="refused to unpack") as err:
            archive.unpack(made, out)
        assert str(made) in str(err.value)
        assert _files(out) == set()
        assert _files(tmp_path) == {"src", f"src/{made.name}", "out"}

    def test_a_zip_bomb_stops_at_the_limit_and_leaves_nothing(self, tmp_path: Path) -> None:
        bomb = _zip(tmp_path / "bomb.zip", {"task/a.json": b"\0" * (3 << 20), "task/b.json": b"\0" * (3 << 20)})
        assert bomb.stat().st_size < 64 << 10
        with pytest.raises(TranscriptError, match=r"unpacks to more than 4 MiB"):
            archive.unpack(bomb, tmp_path / "out", max_bytes=4 << 20)
        assert _files(tmp_path / "out") == set()

    def test_a_tar_bomb_stops_at_the_limit(self, tmp_path: Path) -> None:
        src = tmp_path / "task"
        src.mkdir()
        (src / "a.json").write_bytes(b"\0" * (2 << 20))
        with pytest.raises(TranscriptError, match="more than 1 MiB"):
            archive.unpack(_tar_folder(src, tmp_path / "t.tar.gz"), tmp_path / "out", max_bytes=1 << 20)

    def test_the_default_limit_is_read_when_unpacking(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(archive, "MAX_UNPACKED_BYTES", 1 << 20)
        bomb = _zip(tmp_path / "bomb.zip", {"task/a.json": b"\0" * (2 << 20)})
        with pytest.raises(TranscriptError, match="more than 1 MiB"):
            load(bomb)

    def test_a_zip_header_that_understates_the_size_does_not_pass(self, tmp_path: Path) -> None:
        # The sizes in a zip's headers are the sender's word: the bytes are counted as they come.
        data = b"\0" * (2 << 20)
        bomb = _zip(tmp_path / "bomb.zip", {"task/a.json": data})
        raw = bytearray(bomb.read_bytes())
        size = len(data).to_bytes(4, "little")
        for at in [i for i in range(len(raw) - 3) if raw[i : i + 4] == size]:
            raw[at : at + 4] = (100).to_bytes(4, "little")
        bomb.write_bytes(bytes(raw))
        with pytest.raises(TranscriptError) as err:
            archive.unpack(bomb, tmp_path / "out", max_bytes=1 << 20)
        assert "more than 1 MiB" in str(err.value) or "BadZipFile" in str(err.value)
        assert _files(tmp_path / "out") == set()

    def test_too_many_members(self, tmp_path: Path) -> None:
        many = _zip(tmp_path / "many.zip", {f"task/{i}.json": b"" for i in range(30)})
        with pytest.raises(TranscriptError, match="more than 20 members"):
            archive.unpack(many, tmp_path / "out", max_members=20)

    def test_an_encrypted_member_is_refused(self, tmp_path: Path) -> None:
        zipped = _zip(tmp_path / "x.zip", {"task/ui_messages.json": b"[]"})
        raw = bytearray(zipped.read_bytes())
        # The general-purpose flag's bit 0, in the local header (offset 6) and the central directory (offset 8).
        raw[6] |= 1
        central = raw.index(b"PK\x01\x02")
        raw[central + 8] |= 1
        zipped.write_bytes(bytes(raw))
        with pytest.raises(TranscriptError, match="encrypted"):
            archive.unpack(zipped, tmp_path / "out")

    def test_an_archive_inside_the_archive_is_not_unpacked_on(self, tmp_path: Path) -> None:
        inner = _zip_folder(CLINE_TASK, tmp_path / "inner.zip")
        outer = _zip(tmp_path / "outer.zip", {"inner.zip": inner.read_bytes()})
        with pytest.raises(TranscriptError, match="an archive inside the archive"):
            load(outer)

    @pytest.mark.parametrize(
        ("data", "match"),
        [
            (b"PK\x03\x04" + b"\x00" * 40, "cannot unpack zip archive"),
            (b"\x1f\x8b\x08\x00" + b"\x00" * 40, "cannot decompress gzip"),
            (b"\x00" * 257 + b"ustar\x0000" + b"\x00" * 40, "not a readable tar archive"),
        ],
        ids=["truncated-zip", "damaged-gzip", "damaged-tar"],
    )
    def test_a_damaged_archive_is_one_clear_error(self, tmp_path: Path, data: bytes, match: str) -> None:
        bad = tmp_path / "bad.zip"
        bad.write_bytes(data)
        with pytest.raises(TranscriptError, match=match) as err:
            load(bad)
        assert str(err.value).startswith(str(bad))

    def test_an_archive_of_nothing_the_lab_reads_says_so(self, tmp_path: Path) -> None:
        zipped = _zip(tmp_path / "photos.zip", {"photos/a.txt": b"hello", "photos/b.txt": b"world"})
        with pytest.raises(TranscriptError, match="holds nothing the lab reads") as err:
            load(zipped)
        assert str(err.value).startswith(str(zipped)) and "lab-archive-" not in str(err.value)

    def test_an_empty_archive(self, tmp_path: Path) -> None:
        with pytest.raises(TranscriptError, match="holds no files"):
            load(_zip(tmp_path / "empty.zip", {}))

    def test_errors_inside_name_the_member_in_the_archive(self, tmp_path: Path) -> None:
        zipped = _zip(tmp_path / "task.zip", {"task/ui_messages.json": b"{not json", "task/api_conversation_history.json": b"{not json"})
        with pytest.raises(TranscriptError) as err:
            load(zipped)
        assert str(err.value).startswith(str(tmp_path / "task.zip" / "task")) and "lab-archive-" not in str(err.value)

    def test_the_unpack_folder_must_be_empty(self, tmp_path: Path) -> None:
        (tmp_path / "out").mkdir()
        (tmp_path / "out" / "keep.txt").write_text("mine", encoding="utf-8")
        with pytest.raises(TranscriptError, match="not empty"):
            archive.unpack(_zip_folder(CLINE_TASK, tmp_path / "t.zip"), tmp_path / "out")
        assert (tmp_path / "out" / "keep.txt").read_text(encoding="utf-8") == "mine"


_NAME_PART = st.sampled_from(["..", ".", "", "a", "b.json", "C:", "\\", "..\\x", "/", "\x00", "__MACOSX", "ü"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(st.lists(_NAME_PART, min_size=1, max_size=4).map("/".join), min_size=1, max_size=4))
def test_any_member_names_unpack_inside_the_folder_or_are_refused(tmp_path_factory: pytest.TempPathFactory, names: list[str]) -> None:
    base = tmp_path_factory.mktemp("names")
    # zipfile cuts a name at NUL (as readers do): what is left is the member's name.
    members = {n: b"x" for n in names if (cut := n.split("\x00", 1)[0]) and not cut.endswith(("/", "\\"))}
    if not members:
        return
    zipped = _zip(base / "x.zip", members)
    out = base / "deep" / "out"
    try:
        archive.unpack(zipped, out)
    except TranscriptError:
        assert _files(out) == set()  # refused: nothing left behind
    # Whatever happened, nothing but the archive and the unpack folder exists under base.
    assert {p.relative_to(base).parts[0] for p in base.rglob("*")} <= {"x.zip", "deep"}
    assert all(p.resolve().is_relative_to(out.resolve()) for p in (base / "deep").rglob("*") if p != out)


# --- the command line ---------------------------------------------------------------------------------


def test_cli_imports_a_zip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    zipped = _zip_folder(CLINE_TASK, tmp_path / "task.zip")
    assert main(["import", str(zipped), "--out", str(tmp_path / "t.lab.json")]) == 0
    assert "as cline" in capsys.readouterr().out
    assert load(tmp_path / "t.lab.json").messages == load(CLINE_TASK).messages


def test_cli_refuses_a_hostile_zip_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    zipped = _zip(tmp_path / "x.zip", {"../evil.json": b"[]"})
    assert main(["import", str(zipped), "--out", str(tmp_path / "t.lab.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "refused to unpack" in err[0]
    assert not (tmp_path.parent / "evil.json").exists()
