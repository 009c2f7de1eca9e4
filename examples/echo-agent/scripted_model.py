"""ScriptedModel: a stand-in for a real LLM that streams canned answers, so the echo agent runs offline.

Rules, looked up from the last message:

- a user message ``echo WORDS``: one ``tool-call`` of the ``echo`` tool with ``{"text": WORDS}``;
- a tool result: ``The echo tool said: OUTPUT``, as one ``text-delta`` per word;
- a user message ``overload``: one ``text-delta``, then it raises ``APIError("overloaded")`` (a stream
  that throws halfway, the case a session journal cannot express on its own);
- anything else: ``You said: TEXT. Try "echo WORDS".``

Every stream ends with a ``finish`` chunk carrying the finish reason and made-up token usage.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any


class APIError(Exception):
    """What a provider SDK raises when the service is overloaded."""


class ScriptedModel:
    async def stream(self, turn: int, step: int, *, messages: list[dict[str, Any]], **_: Any) -> AsyncIterator[dict[str, Any]]:
        last = messages[-1]
        if last["role"] == "tool":
            async for chunk in self._say(f"The echo tool said: {last['content']}", messages):
                yield chunk
            return
        text = last["content"]
        if text.startswith("echo "):
            await asyncio.sleep(0)
            yield {"type": "tool-call", "toolCallId": f"call_{turn}_{step}", "toolName": "echo",
                   "input": {"text": text[len("echo "):]}}
            yield _finish("tool-calls", messages, 1)
            return
        if text == "overload":
            yield {"type": "text-delta", "text": "Let me think"}
            await asyncio.sleep(0)
            raise APIError("overloaded")
        async for chunk in self._say(f'You said: {text}. Try "echo WORDS".', messages):
            yield chunk

    async def _say(self, text: str, messages: list[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
        words = text.split(" ")
        for i, word in enumerate(words):
            await asyncio.sleep(0)
            yield {"type": "text-delta", "text": word if i == 0 else " " + word}
        yield _finish("stop", messages, len(words))


def _finish(reason: str, messages: list[dict[str, Any]], output_tokens: int) -> dict[str, Any]:
    input_tokens = sum(len(str(m.get("content", "")).split()) for m in messages)
    return {"type": "finish", "finishReason": reason, "usage": {"inputTokens": input_tokens, "outputTokens": output_tokens}}
