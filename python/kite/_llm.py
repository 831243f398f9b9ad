"""LLM: a model loaded into Kite's engine, with generate, chat, stream and astream."""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from collections import deque
from typing import Any, Deque, Dict, Iterator, List, Optional, Sequence, Union

from . import _kite
from ._outputs import CompletionOutput, TokenLogprob, ToolCall
from ._params import GuidedDecodingParams, SamplingParams
from ._stream import TextStream, astream_pieces

Prompt = Union[str, Sequence[int]]
_KV_TYPES = ("f32", "f16", "q8_0", "q4_0")
_POOLINGS = ("mean", "cls", "last")


def _check_int(name: str, value: Any, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be int, not {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{name} {value} is not in [{low}, {high}]")


def _model_name(name: str, value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path or a model name, not {type(value).__name__}")
    return os.fspath(value)


class LLM:
    """A model in Kite's engine: the engine ``kite run`` and ``kite serve`` use, in-process.

    Args:
        model: a GGUF file, or the name of an installed model (``kite models``), as ``-m``;
            None: $KITE_MODEL, else the installed default model.
        threads: worker threads (None: one per physical core).
        ctx: context length per sequence (None: the model's).
        kv_type: the KV cache's type: f16, f32, q8_0 or q4_0.
        max_seqs: sequences running at once; more wait their turn (as ``kite serve
            --max-seqs``). The KV cache holds max_seqs full contexts, at most 1 GiB.
        draft_model: a smaller model with the same vocabulary for speculative decoding
            (the output is the model's either way).
        pooling: how ``embed`` pools a generative model's final hidden state (mean, cls or
            last); None: an embedding model pools as its file says, a generative one cannot
            embed.

    Raises:
        KiteError: the model cannot be found or loaded.
        TypeError, ValueError: an argument of the wrong type or out of range.
    """

    def __init__(
        self,
        model: Optional[Union[str, os.PathLike]] = None,
        threads: Optional[int] = None,
        ctx: Optional[int] = None,
        kv_type: str = "f16",
        max_seqs: int = 16,
        draft_model: Optional[Union[str, os.PathLike]] = None,
        pooling: Optional[str] = None,
    ) -> None:
        path = _model_name("model", model)
        draft = _model_name("draft_model", draft_model)
        if threads is not None:
            _check_int("threads", threads, 1, 1024)
        if ctx is not None:
            _check_int("ctx", ctx, 1, 1 << 24)
        _check_int("max_seqs", max_seqs, 1, 4096)
        if not isinstance(kv_type, str):
            raise TypeError(f"kv_type must be str, not {type(kv_type).__name__}")
        if kv_type not in _KV_TYPES:
            raise ValueError(f"kv_type '{kv_type}' is not one of {', '.join(_KV_TYPES)}")
        if pooling is not None and pooling not in _POOLINGS:
            raise ValueError(f"pooling {pooling!r} is not one of {', '.join(_POOLINGS)}")
        self._engine = _kite.Engine(
            path, threads or 0, ctx or 0, kv_type, max_seqs, draft, pooling or ""
        )
        # The engine steps every sequence at once; each caller's events wait here, by id.
        self._lock = threading.RLock()
        self._pending: Dict[int, Deque[Any]] = {}

    # -- the engine's loop, shared by every caller -------------------------------------------

    def _submit(self, prompt: List[int], params: Any) -> int:
        with self._lock:
            seq_id = self._engine.submit(prompt, params)
            self._pending[seq_id] = deque()
            return seq_id

    def _cancel(self, seq_id: int) -> None:
        with self._lock:
            if self._pending.pop(seq_id, None) is not None and not self._engine.closed:
                self._engine.release(seq_id)

    def _step(self) -> None:
        """One engine step (all sequences); raises KeyboardInterrupt on a pending Ctrl-C."""
        with self._lock:
            if not self._engine.has_work():
                raise _kite.KiteError("the engine has no work but a sequence has not finished")
            for ev in self._engine.step():
                queue = self._pending.get(ev.seq_id)
                if queue is not None:
                    queue.append(ev)

    def _next_event(self, seq_id: int) -> Any:
        """The next event of one sequence, stepping the engine until there is one."""
        while True:
            with self._lock:
                queue = self._pending.get(seq_id)
                if queue is None:
                    raise _kite.KiteError("this generation was cancelled")
                if queue:
                    return queue.popleft()
                self._step()

    def _prepare(self, prompt: Prompt, params: Optional[SamplingParams]) -> tuple:
        if params is None:
            params = SamplingParams()
        if not isinstance(params, SamplingParams):
            raise TypeError(f"params must be SamplingParams, not {type(params).__name__}")
        if isinstance(prompt, str):
            ids = self._engine.tokenize(prompt, True, True)
        elif isinstance(prompt, (list, tuple)) and all(
            isinstance(t, int) and not isinstance(t, bool) for t in prompt
        ):
            ids = list(prompt)
        else:
            raise TypeError("a prompt must be str or a list of token ids")
        native = params._native()
        if params.guided_decoding is not None:
            self._engine.constrain(native, *params.guided_decoding._spec())
        self._engine.validate(ids, native)
        return ids, native

    # -- the API -------------------------------------------------------------------------------

    def generate(
        self,
        prompts: Union[Prompt, Sequence[Prompt]],
        params: Optional[Union[SamplingParams, Sequence[SamplingParams]]] = None,
    ) -> List[CompletionOutput]:
        """Generates for every prompt, all through the engine's continuous batching at once.

        ``prompts`` is a string, a list of token ids, or a list of either; ``params`` one
        SamplingParams for all or one per prompt. Returns one CompletionOutput per prompt,
        in order. Every request is checked before any runs (ValueError naming the field).
        Ctrl-C cancels the requests between two engine steps and raises KeyboardInterrupt;
        the LLM stays usable.
        """
        if isinstance(prompts, str) or (
            isinstance(prompts, (list, tuple)) and prompts and isinstance(prompts[0], int)
        ):
            prompts = [prompts]
        prompts = list(prompts)
        if isinstance(params, (list, tuple)):
            if len(params) != len(prompts):
                raise ValueError(f"{len(params)} SamplingParams for {len(prompts)} prompts")
            per_prompt = list(params)
        else:
            per_prompt = [params] * len(prompts)
        requests = [self._prepare(p, sp) for p, sp in zip(prompts, per_prompt)]
        wants_logprobs = [sp is not None and sp.logprobs is not None for sp in per_prompt]
        return self._run(requests, wants_logprobs)

    def _run(self, requests: List[tuple], wants_logprobs: List[bool]) -> List[CompletionOutput]:
        outputs = [CompletionOutput(logprobs=[] if w else None) for w in wants_logprobs]
        ids: List[int] = []
        try:
            for prompt, native in requests:
                ids.append(self._submit(prompt, native))
            running = dict(zip(ids, outputs))
            while running:
                self._step()
                with self._lock:
                    for seq_id in list(running):
                        queue = self._pending[seq_id]
                        while queue:
                            if _apply(running[seq_id], queue.popleft()):
                                del running[seq_id]
                                break
        finally:
            for seq_id in ids:
                self._cancel(seq_id)
        return outputs

    def chat(
        self,
        messages: Sequence[Dict[str, Any]],
        params: Optional[SamplingParams] = None,
        tools: Optional[Sequence[Dict[str, Any]]] = None,
        response_format: Optional[Union[str, Dict[str, Any]]] = None,
    ) -> CompletionOutput:
        """The assistant's reply to OpenAI-shaped ``messages``, through the model's chat
        template (a model without one gets ChatML). With ``tools`` (OpenAI function
        definitions) the template offers them and the reply's calls come back in
        ``tool_calls``. ``response_format`` is OpenAI's: ``{"type": "json_object"}`` or
        ``{"type": "json_schema", "json_schema": {"schema": ...}}`` constrain the reply
        (as ``SamplingParams.guided_decoding`` does); None or text leave it free.
        """
        guided = _response_format(response_format)
        if guided is not None:
            params = params or SamplingParams()
            if params.guided_decoding is not None:
                raise ValueError("give response_format or params.guided_decoding, not both")
            params = dataclasses.replace(params, guided_decoding=guided)
        if not isinstance(messages, (list, tuple)) or not all(
            isinstance(m, dict) for m in messages
        ):
            raise TypeError("messages must be a list of dicts with 'role' and 'content'")
        if tools is not None and not isinstance(tools, (list, tuple)):
            raise TypeError("tools must be a list of OpenAI tool definitions")
        ids = self._engine.chat_prompt(json.dumps(list(messages)), json.dumps(list(tools)) if tools else "")
        out = self.generate([ids], params)[0]
        if tools:
            content, calls = _kite.parse_tool_calls(out.text)
            if calls:
                out.text = content
                out.tool_calls = [ToolCall(*c) for c in calls]
        return out

    def stream(self, prompt: Prompt, params: Optional[SamplingParams] = None) -> TextStream:
        """An iterator over the generated text, piece by piece as the engine produces it
        (the pieces join to ``generate``'s text). The request is checked and submitted now;
        closing the iterator, or leaving it, cancels the generation."""
        prompt_ids, native = self._prepare(prompt, params)
        return TextStream(self, self._submit(prompt_ids, native))

    async def astream(self, prompt: Prompt, params: Optional[SamplingParams] = None):
        """``stream`` for asyncio (``async for piece in llm.astream(...)``): the engine runs in
        a worker thread and hands the pieces over; cancelling the task cancels the generation."""
        async for piece in astream_pieces(self.stream(prompt, params)):
            yield piece

    def embed(
        self,
        inputs: Union[str, Sequence[str], Sequence[Sequence[int]]],
        dimensions: Optional[int] = None,
    ) -> "numpy.ndarray":
        """Embedding vectors: a float32 numpy array with one L2-normalised row per input.

        Args:
            inputs: a text, a list of texts, or a list of token-id lists. Texts get the
                model's special tokens (``[CLS] ... [SEP]``); all inputs go through the
                encoder together, in ragged batches.
            dimensions: keep the first N values and normalise again (Matryoshka: nomic-embed
                is trained for it); None: all of them.

        Raises:
            ValueError: no input, an empty one, one longer than the model's context, a token id
                outside the vocabulary, dimensions out of range, or a generative model without
                ``pooling``.
        """
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, Sequence):
            raise TypeError(f"inputs must be a str or a list, not {type(inputs).__name__}")
        ids = []
        for i, item in enumerate(inputs):
            if isinstance(item, str):
                if not item:
                    raise ValueError(f"input {i} is an empty string")
                ids.append(self.tokenize(item, add_special=True, parse_special=False))
            elif isinstance(item, Sequence) and all(isinstance(t, int) for t in item):
                ids.append(list(item))
            else:
                raise TypeError(f"input {i} must be a str or a list of token ids")
        if dimensions is not None:
            _check_int("dimensions", dimensions, 1, 1 << 20)
        with self._lock:  # between two engine steps, as the server runs its embedding jobs
            return self._engine.embed(ids, dimensions or 0)

    def tokenize(self, text: str, add_special: bool = True, parse_special: bool = True) -> List[int]:
        """Token ids of ``text``: with add_special the model's BOS when it wants one; with
        parse_special, special-token text (``<|im_start|>``) becomes its token."""
        if not isinstance(text, str):
            raise TypeError(f"text must be str, not {type(text).__name__}")
        return self._engine.tokenize(text, bool(add_special), bool(parse_special))

    def detokenize(self, ids: Sequence[int]) -> str:
        """The text of token ids (ValueError-free: an id outside the vocabulary is a KiteError)."""
        return self._engine.detokenize(list(ids))

    @property
    def context_length(self) -> int:
        """Tokens per sequence."""
        return self._engine.context_length

    @property
    def model_path(self) -> str:
        """The GGUF file the model came from."""
        return self._engine.model_path

    def close(self) -> None:
        """Frees the engine and the model; every later call raises KiteError."""
        with self._lock:
            self._pending.clear()
            self._engine.close()

    def __enter__(self) -> "LLM":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _response_format(rf: Any) -> Optional[GuidedDecodingParams]:
    """OpenAI's response_format as a constraint (None: free text)."""
    if rf in (None, "text") or rf == {"type": "text"}:
        return None
    if not isinstance(rf, dict) or not isinstance(rf.get("type"), str):
        raise TypeError("response_format must be a dict with a 'type'")
    if rf["type"] == "json_object":
        return GuidedDecodingParams(json_object=True)
    if rf["type"] == "json_schema":
        schema = (rf.get("json_schema") or {}).get("schema")
        if schema is None:
            raise ValueError("response_format json_schema needs {'json_schema': {'schema': ...}}")
        return GuidedDecodingParams(json=schema)
    raise ValueError(f"response_format type {rf['type']!r}: expected text, json_object or json_schema")


def _apply(out: CompletionOutput, ev: Any) -> bool:
    """Adds one event to an output; True when it finished the sequence."""
    out.token_ids.append(ev.token)
    out.text += ev.text
    if out.logprobs is not None:
        out.logprobs.append(TokenLogprob(ev.token, ev.logprob, list(ev.top_logprobs)))
    if not ev.finish:
        return False
    if ev.finish == "error":
        raise _kite.KiteError(
            "generation stopped: the model produced non-finite logits (NaN or infinity)"
        )
    out.finish_reason = ev.finish
    return True
