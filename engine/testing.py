"""Tiny random models for tests: real code paths, seconds to build, no downloads."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import torch

from engine.model import InfillTransformer, ModelConfig
from engine.modeldir import save_model_dir

_TRAINING_TEXT = [
    "def add(a, b):\n    return a + b\n",
    "class Point:\n    def __init__(self, x, y):\n        self.x = x\n        self.y = y\n",
    "for i in range(10):\n    if i % 2 == 0:\n        print(i)\n",
    "function add(a, b) {\n  return a + b;\n}\nconst xs = [1, 2, 3].map((x) => x * 2);\n",
    "import os\nimport sys\n\nif __name__ == '__main__':\n    sys.exit(main())\n",
    "héllo wörld — 🎉 tabs\tand\r\nCRLF\n",
]


@lru_cache(maxsize=1)
def _tiny_tokenizer_json() -> str:
    from engine.training.tokenizer_train import train_tokenizer

    return train_tokenizer(iter(_TRAINING_TEXT * 20), vocab_size=400).to_str()


def tiny_config(vocab_size: int) -> ModelConfig:
    return ModelConfig(vocab_size=vocab_size, d_model=32, n_layers=2, n_heads=2, ffn_hidden=64, max_position=2048)


def make_tiny_model_dir(path: str | Path, seed: int = 0) -> Path:
    """Write a tiny random infill model directory at `path` (created if needed)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    tok_file = path / "tokenizer.json"
    tok_file.write_text(_tiny_tokenizer_json())
    from engine.tokenizer import Tokenizer

    vocab = Tokenizer.from_file(tok_file).vocab_size
    torch.manual_seed(seed)
    model = InfillTransformer(tiny_config(vocab))
    save_model_dir(model, tok_file, path, {"name": "tiny-random", "training": {"steps": 0, "tokens_seen": 0}})
    return path
