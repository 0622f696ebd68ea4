"""Claude and Anthropic formats: Claude Code (native, hook dumps, sanitised, flat block-per-line exports), Anthropic Messages bodies, the Agent SDK, Managed Agents."""

__all__: list[str] = []
