"""Editor and terminal coding assistants: Aider, Cline / Roo Code, Continue, GitHub Copilot (Chat and CLI), Gemini CLI, Qwen Code."""

__all__: list[str] = []
