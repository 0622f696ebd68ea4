"""Agents that drive a shell or tools from a script: mini-swe-agent's and SWE-agent's text commands (smolagents), AutoGen, LangChain / LangGraph, Pydantic AI, MiniCode."""

__all__: list[str] = []
