"""Compaction Lab: a library and visual lab for compacting the context of LLM agents."""

__version__ = "0.1.0"
