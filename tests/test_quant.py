"""engine.quant, torch paths: formats, modules, prepare_for_load, the quantize CLI."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import torch.nn as nn
from safetensors.torch import load_file, save_file

from engine.model import InfillTransformer, ModelConfig
from engine.quant import Int4Linear, Int8Linear, prepare_for_load, quantize_model
from engine.quant import formats
from engine.quant.quantized_dir import main as quantize_main
from engine.types import InfillError

# ffn_hidden=88 is not a multiple of any int4 group size: exercises the K padding.
TINY = ModelConfig(vocab_size=300, d_model=64, n_layers=2, n_heads=4, ffn_hidden=88, max_position=128)


def tiny_model(seed: int = 0) -> InfillTransformer:
    torch.manual_seed(seed)
    return InfillTransformer(TINY).eval()


def relative_logit_error(a: InfillTransformer, b: InfillTransformer, seed: int = 1) -> float:
    g = torch.Generator().manual_seed(seed)
    prefix = torch.randint(0, TINY.vocab_size, (19,), generator=g).tolist()
    suffix = torch.randint(0, TINY.vocab_size, (7,), generator=g).tolist()
    canvas = torch.randint(0, TINY.vocab_size, (2, 13), generator=g)
    la = a.canvas_logits(a.encode_context(prefix, suffix), canvas)
    lb = b.canvas_logits(b.encode_context(prefix, suffix), canvas)
    return float((la - lb).abs().max() / la.abs().max())


# ------------------------------------------------------------------ formats
@pytest.mark.parametrize("shape", [(7, 33), (64, 256), (1, 5)])
def test_int8_roundtrip_within_half_step(shape: tuple[int, int]) -> None:
    w = torch.randn(*shape) * torch.rand(shape[0], 1)  # rows of different ranges
    w[0] = 0.0  # an all-zero row must survive (scale 1, codes 0)
    q, s = formats.quantize_int8(w)
    assert q.dtype == torch.int8 and s.shape == (shape[0],)
    assert int(q.abs().max()) <= 127
    err = (formats.dequantize_int8(q, s) - w).abs()
    assert torch.all(err <= s[:, None] / 2 + 1e-7)
    assert torch.all(formats.dequantize_int8(q, s)[0] == 0)


@pytest.mark.parametrize("group_size", formats.INT4_GROUP_SIZES)
@pytest.mark.parametrize("k", [31, 64, 200])
def test_int4_roundtrip_and_packing(group_size: int, k: int) -> None:
    n = 9
    w = torch.randn(n, k) + torch.linspace(-1, 1, n)[:, None]  # off-centre rows: asymmetric ranges
    packed, scales, mins = formats.quantize_int4(w, group_size)
    kp = formats.padded_k(k, group_size)
    assert packed.shape == (n, kp // 2) and packed.dtype == torch.uint8
    assert scales.shape == mins.shape == (n, kp // group_size) and scales.dtype == torch.float16
    codes = formats.unpack_int4(packed)
    # Re-pack independently of quantize_int4 (low nibble = even k) and compare bytes.
    assert torch.equal(codes[:, 0::2] + 16 * codes[:, 1::2], packed)
    assert int(codes.max()) <= 15
    deq = formats.dequantize_int4(packed, scales, mins, group_size, k)
    assert deq.shape == (n, k)
    s = scales.float().repeat_interleave(group_size, dim=1)[:, :k]
    m = mins.float().repeat_interleave(group_size, dim=1)[:, :k]
    # Half a step, plus what fp16 storage of the scale (x15 codes) and the minimum adds.
    bound = s / 2 + 2**-10 * (m.abs() + 15 * s) + 1e-6
    assert torch.all((deq - w).abs() <= bound)


def test_int4_rejects_unsupported_group_size() -> None:
    with pytest.raises(ValueError, match="group size"):
        formats.quantize_int4(torch.randn(4, 64), 48)


# ------------------------------------------------------------------ modules
@pytest.mark.parametrize("bits", [8, 4])
@pytest.mark.parametrize("bias", [False, True])
def test_quantized_linear_matches_dequantized_weight(bits: int, bias: bool) -> None:
    torch.manual_seed(3)
    linear = nn.Linear(88, 37, bias=bias)
    q = Int8Linear.from_linear(linear) if bits == 8 else Int4Linear.from_linear(linear, group_size=32)
    x = torch.randn(2, 5, 88)
    expected = nn.functional.linear(x, q.dequantized_weight(), linear.bias)
    torch.testing.assert_close(q(x), expected, rtol=1e-5, atol=1e-5)
    # And close to the float layer, within the format's error.
    with torch.no_grad():
        rel = float((q(x) - linear(x)).abs().max() / linear(x).abs().max())
    assert rel < (0.02 if bits == 8 else 0.15)


@pytest.mark.parametrize("k,group_size", [(31, 32), (200, 64), (256, 128)])
def test_int4_grouped_cpu_path_matches_reference(k: int, group_size: int) -> None:
    torch.manual_seed(k)
    packed, scales, mins = formats.quantize_int4(torch.randn(23, k) * 0.1 + 0.05, group_size)
    x = torch.randn(3, 4, k)
    codes = formats.unpack_int4(packed)
    torch.testing.assert_close(
        formats.int4_linear_grouped(x, codes, scales, mins, group_size),
        formats.int4_linear_ref(x, packed, scales, mins, group_size),
        rtol=1e-5, atol=1e-5,
    )


def test_int4_code_cache_follows_loaded_weights() -> None:
    torch.manual_seed(0)
    a, b = nn.Linear(64, 16, bias=False), nn.Linear(64, 16, bias=False)
    qa, qb = Int4Linear.from_linear(a, 32), Int4Linear.from_linear(b, 32)
    x = torch.randn(2, 64)
    ya = qa(x)  # fills qa's unpacked-code cache
    qa.load_state_dict(qb.state_dict())  # in-place copy into the same buffers
    torch.testing.assert_close(qa(x), qb(x))
    assert not torch.allclose(qa(x), ya)


def test_quantize_model_swaps_every_linear_and_unties_head() -> None:
    model = tiny_model()
    spec = quantize_model(model, bits=8)
    assert spec["tied_head"] is True
    assert spec["modules"][-1] == "lm_head" and len(spec["modules"]) == 4 * TINY.n_layers + 1
    assert not any(type(m) is nn.Linear for m in model.modules())
    assert isinstance(model.embed, nn.Embedding)  # token lookup stays float
    keys = set(model.state_dict())
    assert "lm_head.weight" not in keys and {"lm_head.qweight", "lm_head.scales", "embed.weight"} <= keys


@pytest.mark.parametrize("bits,group_size,limit", [(8, 64, 0.01), (4, 32, 0.08), (4, 128, 0.08)])
def test_quantized_model_logits_close_to_float(bits: int, group_size: int, limit: float) -> None:
    ref = tiny_model()
    model = tiny_model()
    quantize_model(model, bits=bits, group_size=group_size)
    err = relative_logit_error(ref, model)
    assert 0 < err < limit  # > 0: the layers really were quantized


@pytest.mark.parametrize("bits", [8, 4])
def test_prepare_for_load_accepts_quantized_state_strictly(tmp_path: Path, bits: int) -> None:
    source = tiny_model()
    spec = quantize_model(source, bits=bits)
    path = tmp_path / "model.safetensors"
    save_file({k: v.contiguous() for k, v in source.state_dict().items()}, str(path))

    target = InfillTransformer(ModelConfig(**{**TINY.to_dict(), "tie_embeddings": False}))
    prepare_for_load(target, json.loads(json.dumps(spec)))  # as read back from config.json
    target.load_state_dict(load_file(str(path)), strict=True)
    target.eval()
    assert relative_logit_error(source, target) == 0.0


def test_prepare_for_load_errors_are_one_line() -> None:
    model = tiny_model()
    bad = [
        ({"method": "weight_only", "version": 1, "bits": 3, "modules": []}, "bits"),
        ({"method": "gptq", "version": 1, "bits": 4, "modules": []}, "unsupported"),
        ({"method": "weight_only", "version": 1, "bits": 4, "group_size": 48, "modules": []}, "group_size"),
        ({"method": "weight_only", "version": 1, "bits": 8, "modules": ["blocks.0.nope"]}, "does not have"),
        ({"method": "weight_only", "version": 1, "bits": 8, "modules": ["final_norm"]}, "not a linear"),
    ]
    for spec, words in bad:
        with pytest.raises(InfillError, match=words) as info:
            prepare_for_load(model, spec)
        assert "\n" not in str(info.value)


# ------------------------------------------------------------------ directories and CLI
def write_float_dir(path: Path, model: InfillTransformer) -> None:
    """A model directory in the format engine.modeldir writes (weights deduplicated)."""
    from engine.modeldir import save_model_dir

    tok = path.parent / "tokenizer-src.json"
    tok.write_text('{"stand-in": "the quantizer copies this file verbatim"}')
    save_model_dir(model, tok, path)
    (path / "notes").mkdir()
    (path / "notes" / "README.txt").write_text("extra files are copied too")


@pytest.mark.parametrize("bits", [8, 4])
def test_cli_writes_a_directory_the_loader_reads(tmp_path: Path, bits: int, capsys: pytest.CaptureFixture[str]) -> None:
    from engine.modeldir import load_infill_model, read_config

    ref = tiny_model()
    write_float_dir(tmp_path / "fp", ref)
    out = tmp_path / f"q{bits}"
    assert quantize_main([str(tmp_path / "fp"), str(out), "--bits", str(bits), "--group-size", "32"]) == 0
    assert "wrote" in capsys.readouterr().out
    assert (out / "tokenizer.json").read_text() == (tmp_path / "fp" / "tokenizer.json").read_text()
    assert (out / "notes" / "README.txt").exists()
    config = read_config(out)
    assert config["quantization"]["bits"] == bits and config["model"]["tie_embeddings"] is False
    assert (out / "model.safetensors").stat().st_size < 0.75 * (tmp_path / "fp" / "model.safetensors").stat().st_size
    loaded = load_infill_model(out, config)
    assert isinstance(loaded.blocks[0].ffn.down, Int8Linear if bits == 8 else Int4Linear)
    assert 0 < relative_logit_error(ref, loaded) < (0.01 if bits == 8 else 0.08)


def test_cli_keeps_a_bf16_source_in_bf16(tmp_path: Path) -> None:
    from engine.modeldir import save_model_dir

    tok = tmp_path / "tokenizer.json"
    tok.write_text("{}")
    save_model_dir(tiny_model(), tok, tmp_path / "bf16", dtype=torch.bfloat16)
    assert quantize_main([str(tmp_path / "bf16"), str(tmp_path / "q"), "--bits", "8"]) == 0
    out = load_file(str(tmp_path / "q" / "model.safetensors"))
    assert out["embed.weight"].dtype == torch.bfloat16 and out["final_norm.weight"].dtype == torch.bfloat16
    assert out["blocks.0.attn.qkv.qweight"].dtype == torch.int8 and out["blocks.0.attn.qkv.scales"].dtype == torch.float32
    assert (tmp_path / "q" / "model.safetensors").stat().st_size < (tmp_path / "bf16" / "model.safetensors").stat().st_size


def test_cli_failure_leaves_no_half_written_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import engine.quant.quantized_dir as cli

    write_float_dir(tmp_path / "fp", tiny_model())

    def disk_full(*args: object, **kwargs: object) -> None:
        raise OSError("No space left on device")

    monkeypatch.setattr(cli, "save_file", disk_full)
    with pytest.raises(OSError):
        cli.quantize_dir(tmp_path / "fp", tmp_path / "q", 8)
    assert not (tmp_path / "q").exists()


def test_cli_bad_inputs_give_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_float_dir(tmp_path / "fp", tiny_model())
    assert quantize_main([str(tmp_path / "fp"), str(tmp_path / "q"), "--bits", "8"]) == 0
    capsys.readouterr()
    cases = [
        ([str(tmp_path / "missing"), str(tmp_path / "o1"), "--bits", "8"], "does not exist"),
        ([str(tmp_path / "q"), str(tmp_path / "o2"), "--bits", "4"], "already quantized"),
        ([str(tmp_path / "fp"), str(tmp_path / "q"), "--bits", "8"], "not an empty directory"),
        ([str(tmp_path / "fp"), str(tmp_path / "fp" / "sub"), "--bits", "8"], "inside it"),
    ]
    for argv, words in cases:
        assert quantize_main(argv) == 1
        err = capsys.readouterr().err.strip()
        assert words in err and "\n" not in err
    assert quantize_main([str(tmp_path / "fp"), str(tmp_path / "o3"), "--bits", "3"]) == 2
    capsys.readouterr()  # argparse's usage lines
    (tmp_path / "file").write_text("")
    assert quantize_main([str(tmp_path / "fp"), str(tmp_path / "file" / "o4"), "--bits", "8"]) == 1  # parent is a file
    err = capsys.readouterr().err.strip()
    assert "error" in err and "\n" not in err and "Traceback" not in err
    assert not (tmp_path / "o3").exists()


# ------------------------------------------------------------------ through engine.load
@pytest.mark.parametrize("bits", [8, 4])
def test_engine_load_runs_a_quantized_directory(tmp_path: Path, bits: int) -> None:
    import engine
    from lab.fixtures.tiny_model import make_tiny_model_dir

    src = make_tiny_model_dir(tmp_path / "fp")
    assert quantize_main([str(src), str(tmp_path / "q"), "--bits", str(bits)]) == 0
    eng = engine.load(tmp_path / "q")
    assert eng.describe() is not None
    result = eng.infill("def add(a, b):\n    return ", "\n", max_tokens=8)
    assert result.forwards >= 1 and result.stop_reason in ("end_of_middle", "max_tokens", "empty")


def test_eval_exact_compares_variants_on_held_out_items(tmp_path: Path) -> None:
    from lab.quant.exact import evaluate
    from lab.fixtures.tiny_model import make_tiny_model_dir

    result = evaluate(make_tiny_model_dir(tmp_path / "fp"), limit=2)
    rows = {r["variant"]: r for r in result["rows"]}
    assert set(rows) == {"float", "int8", "int4"}
    assert rows["float"]["same_rate"] == 1.0 and all(r["items"] == 2 for r in rows.values())
