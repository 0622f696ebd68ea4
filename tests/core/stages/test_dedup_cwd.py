"""Read dedup across path forms: the working directory (config and ``cd``) makes /repo/a.py and a.py one file."""

from __future__ import annotations

from typing import Any

import posixpath
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.core.config import CompactionConfig, parse_config
from lab.core.events import CompactorState, StageContext
from lab.core.pipeline import run_stage
from lab.core.messages import Message, ToolResultBlock, ToolUseBlock
from lab.core.presets import preset
from lab.core.shell_paths import change_dir
from lab.core.stages.dedup import DedupConfig, DedupStage, read_target, DedupState
from lab.core.store import MemoryStore
from lab.core.tokens.base import MiniCodeCounter
from lab.errors import ConfigError
from tests.builders import call_and_result, system, user
from tests.core.test_incremental import assert_same_run

FILE = "".join(f"def f{i}():\n    return {i}\n" for i in range(40))


def make_ctx(state: CompactorState | None = None, **extra: object) -> StageContext:
    return StageContext(CompactionConfig(), MiniCodeCounter(), MemoryStore(), None, state or CompactorState(), **extra)  # type: ignore[arg-type]


def results(messages: list[Message]) -> dict[str, ToolResultBlock]:
    return {b.tool_use_id: b for m in messages for b in m.content if isinstance(b, ToolResultBlock)}


def run(msgs: list[Message], cwd: str | None = None) -> tuple[dict[str, ToolResultBlock], dict[str, tuple[str, str]]]:
    """The results after dedup, and the index of sources the stage's memo holds (file key -> (hash, message id))."""
    memos: dict[str, Any] = {}
    out = run_stage(DedupStage(DedupConfig(cwd=cwd)), msgs, make_ctx(memos=memos))
    return results(out.messages), memos["dedup"].table("index")


def read(tid: str, path: str, content: str = FILE) -> list[Message]:
    return call_and_result("Read", content, tool_id=tid, file_path=path)


def bash(tid: str, command: str, output: str = "") -> list[Message]:
    return call_and_result("Bash", output, tool_id=tid, command=command)


class TestConfig:
    def test_default_is_unknown(self) -> None:
        assert DedupConfig().cwd is None

    @pytest.mark.parametrize("given_,stored", [("/repo", "/repo"), ("  /repo/src/../lib/ ", "/repo/lib"), ("", None), ("   ", None)])
    def test_normalised(self, given_: str, stored: str | None) -> None:
        assert DedupConfig(cwd=given_).cwd == stored

    @pytest.mark.parametrize("bad", ["repo", "./repo", "~/repo", "C:\\repo", "/" + "x" * 5000])
    def test_not_an_absolute_posix_path_is_a_config_error_naming_the_field(self, bad: str) -> None:
        with pytest.raises(ConfigError, match="dedup.cwd"):
            parse_config({"dedup": {"cwd": bad}})

    def test_read_target_uses_the_configured_directory(self) -> None:
        use = ToolUseBlock(id="a", name="Read", input={"file_path": "src/../a.py"})
        assert read_target(use, DedupConfig()).key == "a.py"  # type: ignore[union-attr]
        target = read_target(use, DedupConfig(cwd="/repo"))
        assert target is not None and target.key == "/repo/a.py" and target.display == "src/../a.py"


class TestResolution:
    def test_absolute_read_then_relative_cat_in_the_configured_directory(self) -> None:
        msgs = [system(), *read("r1", "/repo/src/app.py"), *bash("c1", "cat src/app.py", FILE)]
        out, index = run(msgs, cwd="/repo")
        assert out["c1"].content.startswith("[Read deduplicated: src/app.py]")  # the path as the read wrote it
        assert list(index) == ["/repo/src/app.py"]
        assert run(msgs)[0]["c1"].compacted is None  # no directory known: two different keys, as before

    @pytest.mark.parametrize("command", ["cd /repo && cat src/app.py", "cd /repo; cat src/app.py", "cd /repo/src && cat ./app.py", "cd /repo && cd src && cat app.py"])
    def test_cd_prefix_of_the_read_itself(self, command: str) -> None:
        out, _ = run([*read("r1", "/repo/src/app.py"), *bash("c1", command, FILE)])
        assert out["c1"].compacted == "dedup"

    def test_cd_persists_and_relative_cd_resolves_against_the_newest(self) -> None:
        msgs = [*bash("d1", "cd /repo"), *read("r1", "src/app.py"), *bash("d2", "cd src"), *bash("c1", "cat app.py", FILE), *read("r2", "/repo/src/app.py")]
        out, index = run(msgs)
        assert out["c1"].compacted == "dedup" and out["r2"].compacted == "dedup"
        assert "index 3" in out["c1"].content and list(index) == ["/repo/src/app.py"]

    def test_a_directory_is_resolved_when_the_call_is_made(self) -> None:
        # Two calls in one message: the first one's cd applies to the second.
        uses = (ToolUseBlock(id="d1", name="Bash", input={"command": "cd /repo"}), ToolUseBlock(id="c1", name="Bash", input={"command": "cat a.py"}))
        answer = Message(role="user", id="ans", content=(ToolResultBlock(tool_use_id="d1", content=""), ToolResultBlock(tool_use_id="c1", content=FILE)))
        msgs = [*read("r1", "/repo/a.py"), Message(role="assistant", id="two", content=uses), answer]
        assert run(msgs)[0]["c1"].compacted == "dedup"

    @pytest.mark.parametrize("command", ["cd", "cd ~", "cd $WORK", "cd -", "make && cd build", "cd src"])
    def test_an_unknowable_cd_makes_relative_paths_count_as_written(self, command: str) -> None:
        start = None if command == "cd src" else "/repo"
        msgs = [*read("r1", "/repo/a.py"), *bash("d1", command), *read("r2", "a.py"), *read("r3", "a.py")]
        out, index = run(msgs, cwd=start)
        assert out["r2"].compacted is None and out["r3"].compacted == "dedup"
        assert set(index) == {"/repo/a.py", "a.py"}

    @pytest.mark.parametrize("path", ["~/notes.md", "C:\\repo\\a.py"])
    def test_tilde_and_windows_paths_are_left_alone(self, path: str) -> None:
        _, index = run([*read("r1", path)], cwd="/repo")
        assert list(index) == [posixpath.normpath(path)]

    def test_a_call_workdir_applies_to_that_call_only(self) -> None:
        # Codex's shell tool runs each command in its "workdir"; the shell itself does not move.
        codex = call_and_result("shell", FILE, tool_id="c1", command=["bash", "-lc", "cat src/app.py"], workdir="/repo")
        later = call_and_result("shell", FILE, tool_id="c2", command=["bash", "-lc", "cat src/app.py"])
        out, index = run([*read("r1", "/repo/src/app.py"), *codex, *later])
        assert out["c1"].compacted == "dedup"
        assert out["c2"].compacted is None and set(index) == {"/repo/src/app.py", "src/app.py"}

    def test_a_write_in_a_workdir_invalidates_the_absolute_read(self) -> None:
        edit = call_and_result("shell", "", tool_id="w1", command=["bash", "-lc", "sed -i s/1/2/ src/app.py"], workdir="/repo")
        out, index = run([*read("r1", "/repo/src/app.py"), *edit, *read("r2", "/repo/src/app.py")])
        assert out["r2"].compacted is None

    def test_partial_reads_keep_their_slice_under_any_form(self) -> None:
        msgs = [*call_and_result("Read", FILE, tool_id="r1", file_path="/repo/a.py", offset=5), *call_and_result("Read", FILE, tool_id="r2", file_path="a.py", offset=5), *read("r3", "a.py")]
        out, _ = run(msgs, cwd="/repo")
        assert out["r2"].content.startswith("[Read deduplicated: a.py (offset=5)]") and out["r3"].compacted is None


class TestInvalidation:
    @pytest.mark.parametrize(
        "write",
        [
            {"name": "Edit", "file_path": "src/app.py"},
            {"name": "Write", "file_path": "./src/../src/app.py"},
            {"name": "str_replace_editor", "command": "str_replace", "path": "/repo/src/app.py"},
            {"name": "Bash", "command": "sed -i s/a/b/ src/app.py"},
            {"name": "Bash", "command": "cd /repo/src && sed -i s/a/b/ app.py"},
            {"name": "Bash", "command": "cd /repo/lib && sed -i s/a/b/ ../src/app.py"},
            {"name": "Bash", "command": "echo x > ./src/app.py"},
        ],
        ids=["Edit-relative", "Write-dotted", "editor-absolute", "sed-relative", "cd-sed", "cd-sed-dotdot", "redirect"],
    )
    def test_a_write_through_any_form_invalidates(self, write: dict) -> None:
        name = write.pop("name")
        for first in ("/repo/src/app.py", "src/app.py"):
            msgs = [*bash("d0", "cd /repo"), *read("r1", first), *call_and_result(name, "ok", tool_id="w1", **write), *read("r2", first)]
            assert run(msgs)[0]["r2"].compacted is None, first

    def test_a_write_elsewhere_does_not_invalidate_when_the_directory_is_known(self) -> None:
        msgs = [*read("r1", "/repo/src/app.py"), *bash("w1", "sed -i s/a/b/ other/app.py"), *call_and_result("Edit", "ok", tool_id="w2", file_path="lib/app.py"), *read("r2", "/repo/src/app.py")]
        assert run(msgs, cwd="/repo")[0]["r2"].compacted == "dedup"

    def test_when_unsure_invalidate(self) -> None:
        # The shell's directory is unknown: "app.py" may be /repo/src/app.py.
        msgs = [*read("r1", "/repo/src/app.py"), *bash("w1", "sed -i s/a/b/ app.py"), *read("r2", "/repo/src/app.py")]
        assert run(msgs)[0]["r2"].compacted is None
        # A relative key read in an unknown directory, then an absolute write ending with it.
        msgs = [*read("r1", "app.py"), *call_and_result("Edit", "ok", tool_id="w1", file_path="/somewhere/app.py"), *read("r2", "app.py")]
        assert run(msgs)[0]["r2"].compacted is None

    def test_a_file_of_the_same_name_in_another_known_directory_is_not_touched(self) -> None:
        msgs = [*read("r1", "/repo/src/app.py"), *call_and_result("Edit", "ok", tool_id="w1", file_path="/repo/lib/app.py"), *read("r2", "/repo/src/app.py")]
        assert run(msgs)[0]["r2"].compacted == "dedup"


# -- a simulated agent with a real working directory: the oracle ---------------------

ROOT, HOME, VAR = "/r", "/home/u", "/r/src"
FILES = ("/r/a.py", "/r/src/a.py", "/r/src/b.py", "/r/lib/c.py")
# Content independent of the file, so only the keys keep two files apart.
VARIANTS = (FILE, FILE + "# v2\n")
READS = ("Read-abs", "Read-rel", "view", "cat", "cd-cat")
WRITES = ("Edit-abs", "Edit-rel", "sed-rel", "sed-abs", "cd-sed", "redirect")
CDS = ("/r", "/r/src", "src", "..", "lib", "~", "$X", "")


@dataclass
class Sim:
    """A session's true state: the directory, whether the stage can know it, the files."""

    cwd: str
    known: bool
    prefix: str = "t"
    fs: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FILES, 0))
    msgs: list[Message] = field(default_factory=list)
    # tool id -> (op index, kind, true file, keyed by absolute path)
    calls: dict[str, tuple[int, str, str, bool]] = field(default_factory=dict)
    n: int = 0

    def rel(self, path: str) -> str:
        return posixpath.relpath(path, self.cwd)

    def add(self, kind: str, true_file: str, name: str, content: str, keyed_abs: bool = False, **inputs: object) -> None:
        tid = f"{self.prefix}{self.n}"
        self.calls[tid] = (self.n, kind, true_file, keyed_abs)
        self.msgs += call_and_result(name, content, tool_id=tid, **inputs)
        self.n += 1

    def read(self, form: str, path: str) -> None:
        content = VARIANTS[self.fs[path]]
        if form == "Read-abs":
            self.add("read", path, "Read", content, True, file_path=path)
        elif form == "view":
            self.add("read", path, "str_replace_editor", content, True, command="view", path=path)
        elif form == "Read-rel":
            self.add("read", path, "Read", content, self.known, file_path=self.rel(path))
        elif form == "cat":
            self.add("read", path, "Bash", content, self.known, command=f"cat {self.rel(path)}")
        else:
            self.cwd, self.known = posixpath.dirname(path), True
            self.add("read", path, "Bash", content, True, command=f"cd {self.cwd} && cat {posixpath.basename(path)}")

    def write(self, form: str, path: str, variant: int) -> None:
        rel = self.rel(path)
        if form == "cd-sed":
            self.cwd, self.known = posixpath.dirname(path), True
        inputs: dict[str, object] = {
            "Edit-abs": {"file_path": path}, "Edit-rel": {"file_path": rel}, "sed-rel": {"command": f"sed -i s/x/y/ {rel}"},
            "sed-abs": {"command": f"sed -i s/x/y/ {path}"}, "cd-sed": {"command": f"cd {self.cwd} && sed -i s/x/y/ {posixpath.basename(path)}"},
            "redirect": {"command": f"echo y > {rel}"},
        }[form]
        self.add("write", path, "Edit" if form.startswith("Edit") else "Bash", "ok", **inputs)
        self.fs[path] = variant

    def cd(self, target: str, form: str) -> None:
        if target in ("~", ""):
            self.cwd, self.known = HOME, False
        elif target == "$X":
            self.cwd, self.known = VAR, False
        else:
            self.cwd = change_dir(self.cwd, target) or self.cwd
            self.known = self.known or target.startswith("/")
        command = {"alone": f"cd {target}", "prefix": f"cd {target} && ls", "suffix": f"ls; cd {target}"}[form].replace("cd  ", "cd ").strip()
        if form == "suffix":
            self.known = False  # a cd after the prefix is not followed
        self.add("cd", self.cwd, "Bash", "", command=command)

    def apply(self, op: tuple) -> None:
        kind = op[0]
        if kind == "read":
            self.read(op[1], FILES[op[2]])
        elif kind == "write":
            self.write(op[1], FILES[op[2]], op[3])
        elif kind == "cd":
            self.cd(op[1], op[2])
        else:
            self.add("noise", "", "Bash", "built", command="make")


def ops(reads: tuple[str, ...] = READS, writes: tuple[str, ...] = WRITES, cds: tuple[str, ...] = CDS, cd_forms: tuple[str, ...] = ("alone", "prefix", "suffix")) -> st.SearchStrategy[list[tuple]]:
    fi = st.integers(0, len(FILES) - 1)
    op = st.one_of(
        st.tuples(st.just("read"), st.sampled_from(reads), fi),
        st.tuples(st.just("read"), st.sampled_from(reads), fi),  # reads twice as likely
        st.tuples(st.just("write"), st.sampled_from(writes), fi, st.integers(0, 1)),
        st.tuples(st.just("cd"), st.sampled_from(cds), st.sampled_from(cd_forms)),
        st.tuples(st.just("noise")),
    )
    return st.lists(op, max_size=14)


def simulate(op_list: list[tuple], configured: bool, start: str = ROOT, prefix: str = "t") -> Sim:
    sim = Sim(cwd=start, known=configured, prefix=prefix)
    for op in op_list:
        sim.apply(op)
    return sim


def deduped_sources(sim: Sim, out: list[Message]) -> dict[str, str]:
    """Deduped read -> the tool id of the read its stub points at."""
    pairs = {}
    for tid, block in results(out).items():
        if block.compacted == "dedup":
            source = out[int(block.content.split("message index ")[1].split(" ")[0])]
            (src,) = [b.tool_use_id for b in source.content if isinstance(b, ToolResultBlock)]
            pairs[tid] = src
    return pairs


class TestAgainstASimulatedShell:
    @settings(max_examples=60, deadline=None)
    @given(op_list=ops(), configured=st.booleans(), start=st.sampled_from([ROOT, HOME]))
    def test_sound_no_dedup_across_a_write_to_the_true_file(self, op_list: list[tuple], configured: bool, start: str) -> None:
        start = ROOT if configured else start
        sim = simulate(op_list, configured, start)
        out = run_stage(DedupStage(DedupConfig(cwd=ROOT if configured else None)), sim.msgs, make_ctx()).messages
        originals = results(sim.msgs)
        for tid, src in deduped_sources(sim, out).items():
            at, _, true_file, keyed_abs = sim.calls[tid]
            src_at, src_kind, src_file, _ = sim.calls[src]
            assert src_kind == "read" and src_at < at and originals[src].content == originals[tid].content
            assert not any(k == "write" and f == true_file and src_at < i < at for i, k, f, _ in sim.calls.values()), f"{tid} deduped across a write"
            if keyed_abs:
                assert src_file == true_file

    @settings(max_examples=60, deadline=None)
    @given(op_list=ops(writes=("Edit-abs", "Edit-rel"), cds=("/r", "/r/src", "src", "..", "lib"), cd_forms=("alone", "prefix")))
    def test_exact_when_the_directory_is_always_known(self, op_list: list[tuple]) -> None:
        # Every re-read of an unchanged file is deduped, and nothing else, whatever form names it.
        sim = simulate(op_list, configured=True)
        out = run_stage(DedupStage(DedupConfig(cwd=ROOT)), sim.msgs, make_ctx()).messages
        index: dict[str, tuple[str, str]] = {}
        expected: dict[str, str] = {}
        for tid, (_, kind, true_file, _) in sim.calls.items():
            content = results(sim.msgs)[tid].content
            if kind == "write":
                index.pop(true_file, None)
            elif kind == "read":
                if true_file in index and index[true_file][0] == content:
                    expected[tid] = index[true_file][1]
                else:
                    index[true_file] = (content, tid)
        assert deduped_sources(sim, out) == expected


# -- incremental runs follow the directory exactly as a run from scratch ---------------

def decisions(state: CompactorState) -> tuple:
    return dict(state.stage("dedup", DedupState).ledger), set(state.stage("dedup", DedupState).seen)


class TestIncremental:
    @settings(max_examples=40, deadline=None)
    @given(op_list=ops(), configured=st.booleans())
    def test_dispatcher_calls_equal_one_call(self, op_list: list[tuple], configured: bool) -> None:
        msgs = simulate(op_list, configured).msgs
        stage = DedupStage(DedupConfig(cwd=ROOT if configured else None))
        state = CompactorState()
        for n in range(2, len(msgs) + 1, 2):
            run_stage(stage, msgs[:n], make_ctx(state))
        assert run_stage(stage, msgs, make_ctx(state)).messages == run_stage(DedupStage(stage.config), msgs, make_ctx()).messages

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(first=ops(), later=st.lists(st.tuples(st.floats(0, 1), ops()), min_size=1, max_size=3), configured=st.booleans())
    def test_rolled_back_cache_equals_a_run_from_scratch(self, first: list[tuple], later: list[tuple[float, list[tuple]]], configured: bool) -> None:
        # Each request keeps a settled prefix of the last output (possibly cutting through cds) and
        # appends another continuation: the journalled cwd must be undone with what it followed.
        config = DedupConfig(cwd=ROOT if configured else None)
        fast, slow = DedupStage(config), DedupStage(config)
        fast_state, slow_state, memos = CompactorState(), CompactorState(), {}
        request, settled, previous = simulate(first, configured).msgs, 0, []
        for step, (share, more) in enumerate([(1.0, [])] + later):
            if step:
                settled = int(share * settled)
                request = previous[:settled] + simulate(more, configured, prefix=f"s{step}_").msgs
            a = run_stage(fast, request, make_ctx(fast_state, settled=settled, memos=memos))
            b = run_stage(slow, request, make_ctx(slow_state))
            assert a.messages == b.messages and a.events == b.events
            assert decisions(fast_state) == decisions(slow_state)
            previous, settled = a.messages, a.unchanged

    def test_a_rewritten_cd_is_rolled_back(self) -> None:
        stage, state, memos = DedupStage(), CompactorState(), {}
        msgs = [system(), user("go"), *bash("d1", "cd /a"), *read("r1", "x.py")]
        out = run_stage(stage, msgs, make_ctx(state, memos=memos)).messages
        assert "/a/x.py" in memos["dedup"].table("index")
        # The cd message is replaced (settled stops before it): the directory must follow the new one.
        again = [*out[:2], *bash("d2", "cd /b"), *read("r2", "x.py"), *read("r3", "/b/x.py")]
        result = run_stage(stage, again, make_ctx(state, settled=2, memos=memos))
        assert result.messages == run_stage(DedupStage(), again, make_ctx()).messages
        assert set(memos["dedup"].table("index")) == {"/b/x.py"} and results(result.messages)["r3"].compacted == "dedup"

    @settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(op_list=ops(), dispatch=st.booleans(), window=st.sampled_from([6_000, 200_000]))
    def test_compactor_incremental_equals_from_scratch(self, op_list: list[tuple], dispatch: bool, window: int) -> None:
        msgs = [system(), user("work"), *simulate(op_list * 3, configured=False).msgs]
        assert_same_run(preset("minicode").model_copy(update={"window": window}), msgs, dispatch=dispatch, clock=False)
