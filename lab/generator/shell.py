"""Shell output (pytest, git, logs, installs, linters) and tool error texts.

Each builder grows its output line by line until it reaches the size the
workspace drew, so a "huge" result is a long but plausible pytest run or log
rather than one repeated line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from collections.abc import Callable

from .vocab import ADJS, ERRORS, NOUNS, VERBS, past

if TYPE_CHECKING:
    from .tools import Workspace

__all__ = ["shell_output", "error_output"]

PACKAGES = ("httpx", "pydantic", "rich", "click", "sqlalchemy", "alembic", "redis", "boto3", "orjson", "structlog", "tenacity", "uvicorn")


def _fill(target: int, first: list[str], more: Callable[[], str], last: list[str] | None = None) -> str:
    lines = list(first)
    size = sum(len(x) + 1 for x in lines)
    while size < target:
        line = more()
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines + (last or []))


def _pytest(ws: Workspace, target: int) -> tuple[str, str]:
    r, kit = ws.rng, ws.kit
    test_file = f"tests/test_{r.choice(NOUNS)}.py"
    failures = r.randrange(0, 3)
    head = ["============================= test session starts ==============================",
            "platform linux -- Python 3.11.9, pytest-8.3.2, pluggy-1.5.0",
            f"rootdir: {ws.root}", "configfile: pyproject.toml", "plugins: anyio-4.4.0, cov-5.0.0",
            f"collected {r.randrange(20, 900)} items", ""]
    state = {"pct": 0}

    def progress() -> str:
        if r.random() < 0.8 or not failures:
            state["pct"] = min(99, state["pct"] + r.randrange(1, 4))
            dots = "".join(r.choice("....................Fs") if failures else "." for _ in range(r.randrange(5, 40)))
            return f"tests/test_{r.choice(NOUNS)}_{r.choice(NOUNS)}.py {dots:<48} [{state['pct']:>3}%]"
        # A failure traceback section, as pytest prints it under FAILURES.
        fn = kit.ident()
        return "\n".join([f"_______________________ test_{fn} _______________________", "",
                          f"    def test_{fn}():", f"        {r.choice(NOUNS)} = {kit.ident()}({r.randrange(100)})",
                          f">       assert {r.choice(NOUNS)}.{r.choice(NOUNS)} == {r.randrange(10)}",
                          f"E       AssertionError: assert {r.randrange(10, 99)} == {r.randrange(10)}", "",
                          f"{test_file}:{r.randrange(10, 400)}: AssertionError"])

    summary = f"{failures} failed, {r.randrange(20, 900)} passed" if failures else f"{r.randrange(20, 900)} passed"
    tail = ["", f"=========================== {summary} in {r.uniform(0.4, 90):.2f}s ==========================="]
    if failures:
        tail.insert(0, f"FAILED {test_file}::test_{kit.ident()} - AssertionError: assert {r.randrange(9)} == {r.randrange(9)}")
    return f"python -m pytest {test_file if r.random() < 0.5 else 'tests/'} -x -q", _fill(target, head, progress, tail)


def _git_diff(ws: Workspace, target: int) -> tuple[str, str]:
    r, kit = ws.rng, ws.kit
    state = {"path": ""}

    def hunk() -> str:
        out = []
        if not state["path"] or r.random() < 0.2:
            state["path"] = ws.new_path(".py")[len(ws.root) + 1 :]
            p = state["path"]
            out += [f"diff --git a/{p} b/{p}", f"index {kit.hexid()}..{kit.hexid()} 100644", f"--- a/{p}", f"+++ b/{p}"]
        start = r.randrange(1, 800)
        out.append(f"@@ -{start},7 +{start},8 @@ def {kit.ident()}(")
        for line in kit.code_lines(".py", r.randrange(150, 500))[-7:]:
            out.append(r.choice(" " * 6 + "-+") + line)
        return "\n".join(out)

    return "git diff", _fill(target, [], hunk)


def _git_log(ws: Workspace, target: int) -> tuple[str, str]:
    r = ws.rng
    return "git log --oneline -n 200", _fill(target, [], lambda: f"{ws.kit.hexid()} {r.choice(VERBS).capitalize()} {r.choice(ADJS)} {r.choice(NOUNS)} handling (#{r.randrange(100, 4000)})")


def _git_status(ws: Workspace, target: int) -> tuple[str, str]:
    r = ws.rng
    first = ["On branch " + r.choice(("main", f"fix/{r.choice(NOUNS)}-{r.choice(NOUNS)}")), "Changes not staged for commit:",
             '  (use "git add <file>..." to update what will be committed)']
    return "git status", _fill(min(target, 1500), first, lambda: f"\tmodified:   {ws.new_path()[len(ws.root) + 1:]}", ["", 'no changes added to commit (use "git add" and/or "git commit -a")'])


def _logs(ws: Workspace, target: int) -> tuple[str, str]:
    r = ws.rng
    levels = ("INFO ", "INFO ", "INFO ", "DEBUG", "WARN ", "ERROR")
    state = {"t": r.randrange(0, 3000)}

    def line() -> str:
        state["t"] += r.randrange(1, 900)
        t = state["t"]
        return (f"2025-03-03T{9 + t // 3_600_000 % 12:02d}:{t // 60_000 % 60:02d}:{t // 1000 % 60:02d}.{t % 1000:03d}Z {r.choice(levels)} "
                f"[{r.choice(NOUNS)}] {past(r.choice(VERBS))} {r.randrange(1, 500)} {r.choice(NOUNS)}s in {r.randrange(1, 4000)}ms "
                f"request_id={ws.kit.hexid(12)}")

    return f"tail -n 2000 logs/{r.choice(NOUNS)}.log", _fill(target, [], line)


def _install(ws: Workspace, target: int) -> tuple[str, str]:
    r = ws.rng

    def line() -> str:
        pkg, ver = r.choice(PACKAGES), f"{r.randrange(0, 5)}.{r.randrange(0, 30)}.{r.randrange(0, 9)}"
        return f"Collecting {pkg}=={ver}\n  Downloading {pkg}-{ver}-py3-none-any.whl ({r.randrange(8, 900)} kB)"

    return "pip install -e '.[dev]'", _fill(target, [f"Obtaining file://{ws.root}"], line, ["Successfully installed " + " ".join(r.sample(PACKAGES, 4))])


def _lint(ws: Workspace, target: int) -> tuple[str, str]:
    r = ws.rng

    def line() -> str:
        full = ws.new_path(".py")
        ws.release(full)
        p = full[len(ws.root) + 1 :]
        return f"{p}:{r.randrange(1, 700)}:{r.randrange(1, 80)}: {r.choice(('E501', 'F401', 'B008', 'UP035', 'SIM108'))} {ws.kit.comment()}"

    return "ruff check .", _fill(target, [], line, [f"Found {r.randrange(2, 300)} errors."])


def _ls(ws: Workspace, target: int) -> tuple[str, str]:
    r = ws.rng
    return "ls -la", _fill(min(target, 6000), [f"total {r.randrange(8, 900)}"], lambda: ws.ls_line(f"{r.choice(NOUNS)}_{r.choice(NOUNS)}{r.choice(('.py', '.md', '.toml', ''))}"))


_SHELL = ((_pytest, 35), (_git_diff, 14), (_logs, 12), (_git_status, 8), (_git_log, 7), (_ls, 8), (_install, 8), (_lint, 8))
_BUILDERS = [b for b, _ in _SHELL]
_WEIGHTS = [w for _, w in _SHELL]


def shell_output(ws: Workspace, target: int) -> tuple[str, str]:
    builder = ws.rng.choices(_BUILDERS, _WEIGHTS)[0]
    return builder(ws, target)


def error_output(ws: Workspace, name: str, tool_input: dict[str, Any]) -> str:
    """A realistic error for a failed call of tool ``name``."""
    r, kit = ws.rng, ws.kit
    path = tool_input.get("file_path") or tool_input.get("path") or ws.root
    if name == "Read":
        return r.choice((f"Error: ENOENT: no such file or directory, open '{path}'", "<tool_use_error>File does not exist.</tool_use_error>",
                         f"Error: EISDIR: illegal operation on a directory, read '{path}'"))
    if name == "Edit":
        return f"<tool_use_error>String to replace not found in file.\nString: {tool_input.get('old_string', '')[:200]}</tool_use_error>"
    if name == "Grep":
        return f"Error: regex parse error:\n    ({tool_input.get('pattern', '')}\n    ^\nerror: unclosed group"
    if name in ("Glob", "LS", "Write"):
        return f"Error: EACCES: permission denied, scandir '{path}'"
    mod = f"{r.choice(NOUNS)}_{r.choice(NOUNS)}"
    frames = []
    for _ in range(r.randrange(2, 12)):
        frames += [f'  File "{ws.root}/src/{r.choice(NOUNS)}/{r.choice(NOUNS)}.py", line {r.randrange(1, 900)}, in {kit.ident()}',
                   f"    {r.choice(NOUNS)} = {kit.ident()}({r.choice(NOUNS)})"]
    kind = r.randrange(3)
    if kind == 0:
        return "\n".join(["Traceback (most recent call last):", *frames, f"ModuleNotFoundError: No module named '{mod}'"])
    if kind == 1:
        return "\n".join(["Exit code 1", "Traceback (most recent call last):", *frames, f"{r.choice(ERRORS)}: {kit.comment()}"])
    return f"Exit code 2\nmake: *** [Makefile:{r.randrange(10, 200)}: {r.choice(VERBS)}] Error 2"
