"""What a generation returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Tuple


@dataclass
class TokenLogprob:
    """One generated token's log-probability, and the most likely tokens at its position."""

    token_id: int
    logprob: float
    top: List[Tuple[int, float]] = field(default_factory=list)


@dataclass
class ToolCall:
    """A call the model made to one of the tools offered to :meth:`LLM.chat`."""

    id: str
    name: str
    arguments: str  # JSON text, as the OpenAI API carries it


@dataclass
class CompletionOutput:
    """One prompt's generation.

    Attributes:
        text: the generated text (stop strings excluded).
        token_ids: the generated tokens.
        finish_reason: "stop" (end of text or a stop string) or "length" (max_tokens or the
            context).
        logprobs: one entry per token when SamplingParams.logprobs was given, else None.
        tool_calls: for :meth:`LLM.chat` with tools, the calls the reply made (``text`` is then
            the reply's other text); else empty.
    """

    text: str = ""
    token_ids: List[int] = field(default_factory=list)
    finish_reason: Optional[str] = None
    logprobs: Optional[List[TokenLogprob]] = None
    tool_calls: List[ToolCall] = field(default_factory=list)
