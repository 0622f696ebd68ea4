"""HTTP logs of model requests and responses (claude-trace, proxy dumps, the lab's own recordings) and SSE stream assembly."""

__all__: list[str] = []
