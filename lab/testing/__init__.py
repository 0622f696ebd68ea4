"""Test doubles that ship with the lab: a fake LLM provider server."""

from .fake_provider import CANNED_SUMMARY, CANNED_TEXT, FakeProvider, FakeUsage, RecordedRequest, Reply, serve

__all__ = ["CANNED_SUMMARY", "CANNED_TEXT", "FakeProvider", "FakeUsage", "RecordedRequest", "Reply", "serve"]
