"""Containers of transcripts, the registry's ``Wrapper``s: archives and compressed files (unpacked), folders of sessions (one picked)."""

__all__: list[str] = []
