"""Kite from Python: the engine the ``kite`` command and ``kite serve`` run, in-process.

>>> from kite import LLM, SamplingParams
>>> with LLM("smollm2-135m") as llm:
...     out = llm.generate(["The capital of France is"], SamplingParams(temperature=0, max_tokens=8))
...     print(out[0].text)

Many prompts given to :meth:`LLM.generate` at once run through the engine's continuous
batching together, as concurrent requests do on the server.
"""

from __future__ import annotations

import sys

try:
    from . import _kite
except ImportError:
    # The in-tree build (scripts/test.sh) leaves the module in build/python, on PYTHONPATH
    # beside this package; the submodules import it as kite._kite either way.
    import _kite  # type: ignore[no-redef]

    sys.modules[__name__ + "._kite"] = _kite

from ._kite import KiteError
from ._llm import LLM
from ._outputs import CompletionOutput, TokenLogprob, ToolCall
from ._params import GuidedDecodingParams, SamplingParams

__all__ = ["LLM", "SamplingParams", "GuidedDecodingParams", "CompletionOutput", "TokenLogprob", "ToolCall", "KiteError"]
