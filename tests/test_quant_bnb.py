"""engine.quant.bnb: bitsandbytes int8 / NF4 swapping, on CPU."""
from __future__ import annotations

import os

import pytest
import torch
import torch.nn as nn

if os.environ.get("CI"):
    import bitsandbytes as bnb  # noqa: F401  (CI installs the test extra: a missing package must fail, not skip)
else:
    bnb = pytest.importorskip("bitsandbytes")

from engine.model import InfillTransformer, ModelConfig  # noqa: E402
from engine.quant.bnb import quantize_linears  # noqa: E402

# ffn_hidden=176: the down projection's in_features is not a multiple of 64.
TINY = ModelConfig(vocab_size=300, d_model=64, n_layers=2, n_heads=4, ffn_hidden=176, max_position=128)


def logits(model: InfillTransformer) -> torch.Tensor:
    g = torch.Generator().manual_seed(5)
    prefix = torch.randint(0, TINY.vocab_size, (21,), generator=g).tolist()
    suffix = torch.randint(0, TINY.vocab_size, (6,), generator=g).tolist()
    canvas = torch.randint(0, TINY.vocab_size, (2, 12), generator=g)
    return model.canvas_logits(model.encode_context(prefix, suffix), canvas)


@pytest.mark.parametrize("mode,module,limit", [("int8", "Linear8bitLt", 0.01), ("nf4", "Linear4bit", 0.08)])
def test_quantize_linears_on_cpu(mode: str, module: str, limit: float) -> None:
    torch.manual_seed(0)
    ref = InfillTransformer(TINY).eval()
    model = InfillTransformer(TINY).eval()
    model.load_state_dict(ref.state_dict())
    names = quantize_linears(model, mode)  # type: ignore[arg-type]
    # eval() after swapping, as loaders do: bitsandbytes takes other CPU paths in eval
    # mode, and ffn_hidden=176 is not a multiple of NF4's block of 64 (a 0.50.2 bug).
    model.eval()
    assert not model.blocks[0].ffn.down.training
    # Every block linear is replaced; the head is tied to the embedding and is left alone.
    assert len(names) == 4 * TINY.n_layers and "lm_head" not in names
    assert model.lm_head.weight is model.embed.weight
    down = model.blocks[0].ffn.down
    assert type(down).__name__ == module
    # The weights really are stored quantized (int8 codes / packed 4-bit bytes), on CPU.
    assert down.weight.dtype in ((torch.int8,) if mode == "int8" else (torch.uint8,))
    assert down.weight.device.type == "cpu"
    a, b = logits(ref), logits(model)
    rel = float((a - b).abs().max() / a.abs().max())
    assert 0 < rel < limit


def test_quantize_linears_rejects_unknown_mode() -> None:
    with pytest.raises(ValueError, match="mode"):
        quantize_linears(nn.Sequential(nn.Linear(4, 4)), "int3")  # type: ignore[arg-type]
