"""Stage 3, read dedup: a re-read of an unchanged file becomes a stub pointing at the earlier read."""

from __future__ import annotations

from pydantic import Field

from .base import StageConfig

__all__ = ["DedupConfig"]


class DedupConfig(StageConfig):
    read_tools: list[str] = Field(
        default_factory=lambda: ["Read", "read_file", "view", "str_replace_editor:view", "cat", "open", "read"],
        description="Tool names that read a file; 'tool:command' matches a tool whose 'command' input equals the command.",
    )
    write_tools: list[str] = Field(
        default_factory=lambda: ["Write", "Edit", "MultiEdit", "write_file", "edit_file", "str_replace_editor:create", "str_replace_editor:str_replace", "str_replace_editor:insert", "apply_patch", "edit", "create"],
        description="Tool names that write or edit a file and so invalidate its dedup entry.",
    )
    path_keys: list[str] = Field(
        default_factory=lambda: ["file_path", "path", "filename", "file", "notebook_path"],
        description="Input keys that may hold the file path, tried in order.",
    )
