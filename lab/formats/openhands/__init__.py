"""OpenHands: V0 event histories (evaluation output.jsonl) and V1 conversations (software-agent-sdk events)."""

__all__: list[str] = []
