"""Agents' own session stores: the ``sqlite_store`` base and its readers (Goose, Crush, Cursor, Zed), Goose's JSONL sessions and OpenCode (exports and storage)."""

__all__: list[str] = []
