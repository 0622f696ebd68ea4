"""What the verbs share (``lab.cli.common``): import warnings printed once on stderr, and the format list in ``import --help``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.cli.main import main
from tests.cli import run as _run


class TestImportWarningsOnEveryVerb:
    """A cut-off last line (or any import warning) is one ``warning: FILE: ...`` line on stderr, whatever the verb."""

    @staticmethod
    def _cut(path: Path) -> Path:
        lines = [{"role": "user", "content": "fix it"}, {"role": "assistant", "content": "done"}]
        path.write_text("".join(json.dumps(x) + "\n" for x in lines) + '{"role": "user", "con', encoding="utf-8")
        return path

    @pytest.mark.parametrize("verb", ["import", "export", "tokens"])
    def test_once_on_stderr(self, verb: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        src = self._cut(tmp_path / "chat.jsonl")
        extra = {"import": ["--out", str(tmp_path / "o.json")], "export": ["--to", "anthropic", "--out", str(tmp_path / "o.json")], "tokens": []}
        code, out, err = _run([verb, str(src), *extra[verb]], capsys)
        assert code == 0
        warned = [line for line in err.splitlines() if "last line cut off" in line]
        assert len(warned) == 1 and warned[0].startswith(f"warning: {src}: line 3: ")
        assert "last line cut off" not in out

    def test_many_warnings_are_capped_with_a_count(self, capsys: pytest.CaptureFixture[str]) -> None:
        from lab.cli.common import print_import_notes
        from lab.core.messages import Transcript

        t = Transcript()
        t.notes.warnings += [f"warning number {k}" for k in range(7)]
        print_import_notes(t, "x.jsonl", limit=3)
        err = capsys.readouterr().err.splitlines()
        assert err == ["warning: x.jsonl: warning number 0", "warning: x.jsonl: warning number 1", "warning: x.jsonl: warning number 2",
                       "warning: x.jsonl: ... and 4 more import warning(s) (`python -m lab import` lists them)"]

    def test_control_characters_cannot_drive_the_terminal(self, capsys: pytest.CaptureFixture[str]) -> None:
        from lab.cli.common import print_import_notes
        from lab.core.messages import Transcript

        t = Transcript()
        t.notes.warnings.append("id \x1b[31mred\nsecond line")
        print_import_notes(t, "x.jsonl")
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "\x1b" not in err


def test_import_help_lists_every_format(capsys: pytest.CaptureFixture[str]) -> None:
    """Detection's error says "`python -m lab import --help` for the rest": the help must hold that list."""
    from lab.formats import FORMATS

    with pytest.raises(SystemExit) as done:
        main(["import", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    listed = {line.split()[0] for line in out.split("formats (--format NAME", 1)[1].splitlines()[1:] if line.strip()}
    assert listed == set(FORMATS)
