"""The floors ARCHITECTURE.md draws, held against every import in the package (issue 29 §4).

A module may import from a lower floor, and from its own room (its package, or itself). An import of a room on
the same floor or a higher one fails here, at the top of a file or inside a function alike; imports only a type
checker sees (under ``if TYPE_CHECKING:``) are left out, as they run nothing. A new room must be given a floor.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT

# Bottom to top: each room may import every room of a lower floor. Keep in step with ARCHITECTURE.md.
FLOORS: tuple[tuple[str, ...], ...] = (
    ("lab.errors", "lab.lazy"),
    ("lab.core", "lab.testing"),
    ("lab.atomic",),
    ("lab.formats", "lab.generator"),
    ("lab.corpus", "lab.replayer"),
    ("lab.probe", "lab.fields"),
    ("lab.evaluation",),
    ("lab.tuning",),
    ("lab.views", "lab.figures"),
    ("lab.ui", "lab.notebook", "lab.serve"),
    ("lab.bench",),
    ("lab.cli",),
    ("lab", "lab.app", "lab.__main__"),
)
FLOOR = {room: n for n, rooms in enumerate(FLOORS) for room in rooms}


def room_of(module: str) -> str:
    """The room a dotted module name lives in: its package under ``lab``, or the top-level module itself."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else "lab"


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every ``lab`` import of ``path`` that runs, relative ones resolved."""
    package = list(path.relative_to(ROOT).with_suffix("").parts)[:-1]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_lines(tree)
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)) or node.lineno in skip:
            continue
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif node.level and not node.module:
            # ``from .. import figures``: each name is a module of that package.
            base = package[: len(package) - node.level + 1]
            out += [(node.lineno, ".".join([*base, a.name])) for a in node.names]
        else:
            base = package[: len(package) - node.level + 1] if node.level else []
            out.append((node.lineno, ".".join([*base, node.module or ""])))
    return [(line, m) for line, m in out if m == "lab" or m.startswith("lab.")]


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


SOURCES = sorted(p for p in (ROOT / "lab").rglob("*.py"))


def test_every_room_has_a_floor() -> None:
    rooms = {room_of(_module(p)) for p in SOURCES}
    assert rooms <= set(FLOOR), f"rooms with no floor: {sorted(rooms - set(FLOOR))} (add them to FLOORS and ARCHITECTURE.md)"


def test_imports_only_point_down() -> None:
    wrong: list[str] = []
    for path in SOURCES:
        own = room_of(_module(path))
        for line, target in imports(path):
            other = room_of(target)
            if other == own or own == "lab":
                continue
            if FLOOR[other] >= FLOOR[own]:
                wrong.append(f"{path.relative_to(ROOT)}:{line} ({own}, floor {FLOOR[own]}) imports {target} (floor {FLOOR[other]})")
    assert not wrong, "imports that do not point down:\n" + "\n".join(wrong)


def test_pages_stay_off_the_other_front_ends() -> None:
    # A page reads state, makes one call and renders; it never runs the CLI, the bench or the notebook's widgets.
    barred = {"lab.cli", "lab.bench", "lab.notebook", "lab.__main__"}
    wrong = [f"{p.relative_to(ROOT)}:{line} imports {m}"
             for p in sorted((ROOT / "pages").glob("*.py")) for line, m in imports(p) if room_of(m) in barred]
    assert not wrong, wrong


@pytest.mark.parametrize("module", ["lab.core.compactor", "lab.views.diff"])
def test_the_resolver_sees_relative_imports(module: str) -> None:
    # The rules above are only as good as the import reader: a file known to import a lower room must show it.
    path = ROOT / (module.replace(".", "/") + ".py")
    assert any(room_of(m) == "lab.errors" or room_of(m) == "lab.core" for _, m in imports(path)), imports(path)


def _graph() -> dict[str, set[str]]:
    """Module -> the lab modules it imports at run time (a name inside a package resolves to the package)."""
    modules = {_module(p): p for p in SOURCES}

    def resolve(name: str) -> str | None:
        while name not in modules:
            if "." not in name:
                return None
            name = name.rsplit(".", 1)[0]
        return name

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        # An extension module (``from . import _scan``) has no source here: it imports nothing of the lab.
        targets = {resolve(m) for _, m in imports(path) if not (ROOT / (m.replace(".", "/") + ".pyi")).exists()}
        graph[name] = {t for t in targets if t is not None and t != name}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    out.append(sorted(group))
    return out


def test_no_import_circles() -> None:
    # Type-only imports are left out (they run nothing); a function-local import that closes a circle counts.
    circles = _circles(_graph())
    assert not circles, "import circles:\n" + "\n".join(" -> ".join(c) for c in circles)


def test_the_circle_finder_finds_one() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_architecture_md_draws_these_floors() -> None:
    # The page's table names each room on the floor this test holds it to (a room is `name/` or `name.py`).
    import re

    drawn: dict[str, int] = {}
    for line in (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8").splitlines():
        row = re.match(r"\| (\d+) \| (.+?) \|", line)
        if row:
            for name in re.findall(r"`([a-z_]+)(?:/|\.py|)`", row.group(2).split(" | ")[0]):
                drawn["lab" if name in ("lab", "__init__") else f"lab.{name}"] = int(row.group(1))
    assert drawn == FLOOR
