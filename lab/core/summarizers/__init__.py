"""Summarizers: rule-based, session-memory and LLM-backed, behind one interface."""

from .base import Summarizer, SummaryRequest, SummaryResult

__all__ = ["Summarizer", "SummaryRequest", "SummaryResult"]
