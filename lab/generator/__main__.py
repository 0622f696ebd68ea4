"""``python -m lab.generator --out sample_sessions``."""

from .samples import main

__all__: list[str] = []

raise SystemExit(main())
