"""OpenAI formats: Chat Completions (and the trajectories built on it), the Responses API, Codex CLI rollouts, Agents SDK session databases."""

__all__: list[str] = []
