"""SamplingParams: how to sample and when to stop, as kite run's and the server's fields."""

from __future__ import annotations

import json as _json
import math
import random
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Union

from . import _kite


def _check_type(name: str, value: object, types: tuple) -> None:
    # bool is an int in Python; a flag given where a number belongs is a mistake.
    if isinstance(value, bool) and bool not in types:
        raise TypeError(f"SamplingParams.{name} must be {types[0].__name__}, not bool")
    if not isinstance(value, types):
        raise TypeError(
            f"SamplingParams.{name} must be {types[0].__name__}, not {type(value).__name__}"
        )


# grammar::ConstraintKind, in its order.
_KINDS = {"json": 0, "json_object": 1, "regex": 2, "grammar": 3, "choice": 4}


@dataclass
class GuidedDecodingParams:
    """Structured output, with vLLM's names: exactly one of

    Attributes:
        json: a JSON Schema (a dict, or its JSON text): the output is JSON it accepts.
        json_object: True: the output is a JSON object.
        regex: the whole output matches this regular expression.
        grammar: a context-free grammar in llama.cpp's GBNF syntax (root rule ``root``).
        choice: the output is exactly one of these strings.

    Every token is sampled among those the constraint allows; what cannot be compiled (an
    unsupported schema keyword, a bad pattern) raises ValueError when the request is made.
    """

    json: Optional[Union[Dict, str]] = None
    json_object: bool = False
    regex: Optional[str] = None
    grammar: Optional[str] = None
    choice: Optional[Sequence[str]] = None

    def __post_init__(self) -> None:
        given = [k for k in _KINDS if getattr(self, k) not in (None, False)]
        if len(given) != 1:
            raise ValueError(
                "GuidedDecodingParams takes exactly one of json, json_object, regex, grammar, "
                f"choice; got {', '.join(given) or 'none'}"
            )
        if self.json is not None and not isinstance(self.json, (dict, str)):
            raise TypeError("GuidedDecodingParams.json must be a dict or JSON text")
        for name in ("regex", "grammar"):
            if getattr(self, name) is not None:
                _check_type(name, getattr(self, name), (str,))
        if self.choice is not None:
            if isinstance(self.choice, str) or not all(isinstance(c, str) for c in self.choice):
                raise TypeError("GuidedDecodingParams.choice must be a list of strings")

    def _spec(self) -> tuple:
        """(kind, text) as the engine compiles them."""
        if self.json is not None:
            return _KINDS["json"], self.json if isinstance(self.json, str) else _json.dumps(self.json)
        if self.json_object:
            return _KINDS["json_object"], ""
        if self.choice is not None:
            return _KINDS["choice"], _json.dumps(list(self.choice))
        name = "regex" if self.regex is not None else "grammar"
        return _KINDS[name], getattr(self, name)


_FLOATS = ("temperature", "top_p", "min_p", "repetition_penalty", "presence_penalty",
           "frequency_penalty", "dry_multiplier", "dry_base")
_INTS = ("max_tokens", "top_k", "penalty_last_n", "dry_allowed_length", "dry_penalty_last_n")


@dataclass
class SamplingParams:
    """Sampling and stopping, with the meanings of the OpenAI API and llama.cpp.

    The defaults draw from the model's plain softmax; ``temperature=0`` is greedy. The engine
    checks the ranges when a request is submitted (``ValueError`` naming the field).

    Attributes:
        max_tokens: tokens to generate, at most.
        temperature: 0 greedy; higher flattens the distribution.
        top_k: keep the k most likely tokens (0: off).
        top_p: keep the smallest set whose probability reaches p (1: off).
        min_p: keep tokens with p >= min_p * p(best) (0: off).
        repetition_penalty: CTRL-style penalty (1: off).
        presence_penalty, frequency_penalty: OpenAI-style penalties (0: off).
        penalty_last_n: tokens the penalties look back on (-1: all).
        dry_multiplier, dry_base, dry_allowed_length, dry_penalty_last_n,
            dry_sequence_breakers: DRY, llama.cpp's "don't repeat yourself" penalty on tokens
            that would continue a repeat longer than dry_allowed_length (multiplier 0: off).
        stop: generation ends before any of these strings (never included in the text).
        seed: the sampler's seed (None: a random one); the same seed gives the same tokens.
        ignore_eos: keep generating past end-of-text tokens.
        logprobs: None for none, 0 for the sampled token's log-probability, k > 0 also the
            k most likely tokens' (taken after bias and penalties, before truncation).
        logit_bias: token id -> value added to its logit (-inf bans it).
        guided_decoding: structured output (GuidedDecodingParams), None for free text.
    """

    max_tokens: int = 16
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    penalty_last_n: int = 64
    dry_multiplier: float = 0.0
    dry_base: float = 1.75
    dry_allowed_length: int = 2
    dry_penalty_last_n: int = -1
    dry_sequence_breakers: Sequence[str] = ("\n", ":", "\"", "*")
    stop: Optional[Union[str, Sequence[str]]] = None
    seed: Optional[int] = None
    ignore_eos: bool = False
    logprobs: Optional[int] = None
    logit_bias: Dict[int, float] = field(default_factory=dict)
    guided_decoding: Optional[GuidedDecodingParams] = None

    def __post_init__(self) -> None:
        for name in _FLOATS:
            _check_type(name, getattr(self, name), (float, int))
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"SamplingParams.{name} must be finite")
        for name in _INTS:
            _check_type(name, getattr(self, name), (int,))
        if self.max_tokens < 1:
            raise ValueError(f"SamplingParams.max_tokens must be at least 1, not {self.max_tokens}")
        _check_type("ignore_eos", self.ignore_eos, (bool,))
        if self.seed is not None:
            _check_type("seed", self.seed, (int,))
            if not 0 <= self.seed < 2**64:
                raise ValueError(f"SamplingParams.seed {self.seed} is not in [0, 2**64)")
        if self.logprobs is not None:
            _check_type("logprobs", self.logprobs, (int,))
            if not 0 <= self.logprobs <= 20:
                raise ValueError(f"SamplingParams.logprobs {self.logprobs} is not in [0, 20]")
        if self.stop is not None:
            stops = [self.stop] if isinstance(self.stop, str) else list(self.stop)
            for s in stops:
                _check_type("stop", s, (str,))
        _check_type("logit_bias", self.logit_bias, (dict,))
        if isinstance(self.dry_sequence_breakers, str):
            raise TypeError("SamplingParams.dry_sequence_breakers must be a list of strings")
        for s in self.dry_sequence_breakers:
            _check_type("dry_sequence_breakers", s, (str,))
        if self.guided_decoding is not None:
            _check_type("guided_decoding", self.guided_decoding, (GuidedDecodingParams,))

    def _stops(self) -> List[str]:
        if self.stop is None:
            return []
        return [self.stop] if isinstance(self.stop, str) else list(self.stop)

    def _native(self) -> "_kite.GenerationParams":
        p = _kite.GenerationParams()
        p.max_tokens = self.max_tokens
        for name in _FLOATS:
            setattr(p, name, float(getattr(self, name)))
        for name in _INTS[1:]:
            setattr(p, name, getattr(self, name))
        p.dry_sequence_breakers = list(self.dry_sequence_breakers)
        p.stop = self._stops()
        p.ignore_eos = self.ignore_eos
        p.logprobs = -1 if self.logprobs is None else self.logprobs
        p.logit_bias = {int(k): float(v) for k, v in self.logit_bias.items()}
        p.seed = random.getrandbits(64) if self.seed is None else self.seed
        return p
