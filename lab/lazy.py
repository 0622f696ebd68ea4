"""Names a package exports but loads on first use (PEP 562's module ``__getattr__``).

Why: ``import lab`` and the CLI's ``--help`` must stay cheap, so the public packages (``lab``,
``lab.core``, ``lab.evaluation``, ``lab.tuning``, ``lab.serve``) name what they export without
importing it; the first ``lab.replay`` loads the replayer. Each package declares a map of its public
names and hands it here, instead of each carrying its own copy of the same few lines.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["Where", "lazy_exports"]

# Where a name lives: a module (absolute, or relative to the package with leading dots) holding an
# attribute of the same name; or (module, attribute), attribute None meaning the module itself.
Where = str | tuple[str, str | None]


def lazy_exports(package: str, exports: Mapping[str, Where], namespace: dict[str, Any]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose module dict is ``namespace``.

    A name is imported when first asked for and then stored in ``namespace``, so later lookups never reach
    ``__getattr__`` again. A name not in ``exports`` is an ``AttributeError``, as for any module.
    """

    def __getattr__(name: str) -> Any:
        where = exports.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attr = (where, name) if isinstance(where, str) else where
        loaded = importlib.import_module(module, package)
        value = loaded if attr is None else getattr(loaded, attr)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
