"""Shared fixtures: one LLM on the default model for the whole module (loading is the slow
part), and the kite binary of the same build to compare against."""

import os
import pathlib

import pytest

import kite

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODEL = ROOT / "models" / "default.gguf"
KITE_BIN = pathlib.Path(os.environ.get("KITE_BIN", ROOT / "build" / "bin" / "kite"))
THREADS = 2


@pytest.fixture(scope="session")
def llm():
    with kite.LLM(str(MODEL), threads=THREADS, max_seqs=16) as model:
        yield model
