"""Open checkpoint families: logits against transformers' own models, loading, bad directories.

Each tiny checkpoint is built with transformers (Qwen2 / LLaMA classes, random weights),
saved in the family's layout, loaded by infill, and compared in fp32.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers")

from engine.families import CachePolicy, load_family_model  # noqa: E402
from lab.fixtures.family_checkpoints import make_tiny_checkpoint, reference_logits  # noqa: E402
from engine.types import InfillError  # noqa: E402

REL_TOL = 1e-5
FAMILIES = ["dream", "dreamon", "llada", "open_dcoder"]


def rel_err(ours: torch.Tensor, ref: torch.Tensor) -> float:
    """max |ours - ref| / max |ref| over the finite entries (padding rows are -inf in both)."""
    finite = torch.isfinite(ref)
    assert torch.equal(finite, torch.isfinite(ours))
    return float((ours[finite] - ref[finite]).abs().max() / ref[finite].abs().max())


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("families")
    return {f: make_tiny_checkpoint(f, root / f, seed=i) for i, f in enumerate(FAMILIES)}


@pytest.mark.parametrize("family", FAMILIES)
def test_forward_matches_transformers(ckpts, family):
    ck = ckpts[family]
    model, tok, info = load_family_model(ck.path, cache_policy="exact")
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, tok.vocab_size, (2, 23), generator=g)
    ids[0, 5] = tok.pad_id  # pads: hidden from attention for Open-dCoder, attended otherwise
    ids[1, 9] = tok.mask_id
    ref = reference_logits(ck, ids, tok.pad_id)
    hidden, _ = model.net(ids, torch.arange(ids.shape[1]), key_mask=model._key_mask(ids))
    assert rel_err(model.net.logits(hidden), ref) <= REL_TOL
    # Guard on the reference itself: it must be bidirectional (a later token changes row 0).
    changed = ids.clone()
    changed[:, -1] = (changed[:, -1] + 1) % tok.vocab_size
    assert (reference_logits(ck, changed, tok.pad_id)[:, 0] - ref[:, 0]).abs().max() > 1e-4


@pytest.mark.parametrize("family", FAMILIES)
def test_canvas_logits_follow_family_layout(ckpts, family):
    """canvas_logits == the transformers logits of the family's infill prompt, with the
    family's shift (Dream, Open-dCoder: row i scores token i+1; LLaDA: no shift)."""
    ck = ckpts[family]
    model, tok, _ = load_family_model(ck.path, cache_policy="exact")
    prefix, suffix = tok.encode("def add(a, b):\n    return "), tok.encode("\n\nprint(add(1, 2))\n")
    ctx = model.encode_context(prefix, suffix)
    canvas = torch.full((2, 6), tok.mask_id)
    canvas[1, 0] = tok.encode("a")[0]
    ours = model.canvas_logits(ctx, canvas)
    lead = [tok.bos_id] if family in ("dream", "dreamon", "llada") else []
    trail = [model.ids.eos] if family in ("dream", "dreamon") else []
    assert ctx.head == lead + prefix and ctx.tail == suffix + trail
    seq = torch.cat([torch.tensor(ctx.head).expand(2, -1), canvas, torch.tensor(ctx.tail).expand(2, -1)], dim=1)
    ref = reference_logits(ck, seq, tok.pad_id)
    P = len(ctx.head)
    rows = [P + j - 1 for j in range(6)] if family != "llada" else [P + j for j in range(6)]
    ref = ref[:, rows]
    V = tok.hf.get_vocab_size(with_added_tokens=True)
    assert rel_err(ours[..., :V], ref[..., :V]) <= REL_TOL
    # Embedding rows past the tokenizer are padding: never proposed.
    assert torch.isinf(ours[..., V:]).all() and ours.shape[-1] > V


def test_bos_not_doubled_and_empty_prefix(ckpts):
    model, tok, _ = load_family_model(ckpts["dream"].path)
    ids = tok.encode("x = 1")
    assert model.encode_context([tok.bos_id] + ids, []).head == [tok.bos_id] + ids
    # Open-dCoder has no bos: an empty prefix puts the canvas at position 0, whose
    # logits come from its own row (Dream's convention), not from a wrapped-around row.
    od, otok, _ = load_family_model(ckpts["open_dcoder"].path, cache_policy="exact")
    ctx = od.encode_context([], otok.encode("pass\n"))
    canvas = torch.full((1, 3), otok.mask_id)
    seq = torch.cat([canvas, torch.tensor([ctx.tail])], dim=1)
    ref = reference_logits(ckpts["open_dcoder"], seq, otok.pad_id)[:, [0, 0, 1]]
    V = otok.hf.get_vocab_size(with_added_tokens=True)
    assert rel_err(od.canvas_logits(ctx, canvas)[..., :V], ref[..., :V]) <= REL_TOL


def test_special_ids_per_family(ckpts):
    _, dtok, dinfo = load_family_model(ckpts["dream"].path)
    assert dtok.hf.id_to_token(dtok.mask_id) == "<|mask|>"
    assert dtok.hf.id_to_token(dtok.bos_id) == "<|beginoftext|>"  # not config's bos_token_id
    assert dtok.hf.id_to_token(dtok.eom_id) == "<|endoftext|>"
    _, ontok, _ = load_family_model(ckpts["dreamon"].path)
    assert ontok.hf.id_to_token(ontok.eom_id) == "<|delete|>"  # DreamOn shrinks with <|delete|>
    _, ltok, linfo = load_family_model(ckpts["llada"].path)
    assert ltok.hf.id_to_token(ltok.mask_id) == "<|mdm_mask|>" and linfo["shift_logits"] is False
    _, otok, oinfo = load_family_model(ckpts["open_dcoder"].path)
    assert otok.hf.id_to_token(otok.mask_id) == "[MASK]" and otok.bos_id is None and oinfo["family"] == "open_dcoder"


def test_llada_default_mask_id(tmp_path):
    # Real LLaDA vocabulary size, so the default id 126336 is a valid embedding row.
    ck = make_tiny_checkpoint("llada", tmp_path / "l", hidden=16, layers=1, heads=2, vocab_rows=126464, config_mask_id=False)
    _, tok, info = load_family_model(ck.path)
    assert tok.mask_id == 126336 == info["mask_id"]


def test_sharded_and_vocab_merges_checkpoint(tmp_path, ckpts):
    ck = make_tiny_checkpoint("dream", tmp_path / "sharded", shards=3, tokenizer_format="vocab_merges")
    assert len(list(ck.path.glob("model-*.safetensors"))) == 3 and not (ck.path / "tokenizer.json").exists()
    model, tok, _ = load_family_model(ck.path, cache_policy="exact")
    text = "def push(self, x):\n    self.items.append(x)\n"
    # Same BPE as a tokenizer.json build: the vocab/merges path reproduces the encoding.
    ref_tok = load_family_model(ckpts["dream"].path)[1]
    assert tok.decode(tok.encode(text)) == text
    assert len(tok.encode(text)) == len(ref_tok.encode(text))
    ids = torch.tensor([tok.encode(text)])
    hidden, _ = model.net(ids, torch.arange(ids.shape[1]))
    assert rel_err(model.net.logits(hidden), reference_logits(ck, ids)) <= REL_TOL


def _copy(ck, tmp_path: Path, name: str) -> Path:
    dst = tmp_path / name
    shutil.copytree(ck.path, dst)
    return dst


def _edit_config(path: Path, **changes) -> None:
    cfg = json.loads((path / "config.json").read_text())
    cfg.update(changes)
    (path / "config.json").write_text(json.dumps(cfg))


def test_bad_directories_name_the_problem(tmp_path, ckpts):
    sharded = make_tiny_checkpoint("llada", tmp_path / "sh", shards=2)
    cases = []

    p = _copy(sharded, tmp_path, "missing_shard")
    (p / "model-00002-of-00002.safetensors").unlink()
    cases.append((p, "shard model-00002-of-00002.safetensors"))

    p = _copy(ckpts["dream"], tmp_path, "unknown_type")
    _edit_config(p, model_type="mamba2")
    cases.append((p, "model_type 'mamba2' is not a supported family"))

    p = _copy(ckpts["dream"], tmp_path, "shape")
    _edit_config(p, intermediate_size=80)
    cases.append((p, "has shape [96, 64] but config.json implies [80, 64]"))

    p = _copy(ckpts["dream"], tmp_path, "truncated")
    f = p / "model.safetensors"
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    cases.append((p, "truncated or corrupt"))

    p = _copy(ckpts["llada"], tmp_path, "biased")
    _edit_config(p, include_bias=True)
    cases.append((p, "include_bias=True is not supported"))

    p = _copy(ckpts["dream"], tmp_path, "yarn")
    _edit_config(p, rope_scaling={"type": "yarn", "factor": 4.0})
    cases.append((p, "rope_scaling="))

    p = _copy(ckpts["open_dcoder"], tmp_path, "autoregressive")
    (p / "special_tokens_map.json").unlink()
    raw = json.loads((p / "tokenizer.json").read_text())
    raw["added_tokens"] = [t for t in raw["added_tokens"] if t["content"] != "[MASK]"]
    raw["model"]["vocab"].pop("[MASK]")
    (p / "tokenizer.json").write_text(json.dumps(raw))
    cases.append((p, "no mask token"))

    p = tmp_path / "empty"
    p.mkdir()
    cases.append((p, "has no config.json"))

    p = _copy(ckpts["dream"], tmp_path, "no_weights")
    (p / "model.safetensors").unlink()
    cases.append((p, "has no *.safetensors weights"))

    for path, needle in cases:
        with pytest.raises(InfillError) as err:
            load_family_model(path)
        message = str(err.value)
        assert needle in message, (path.name, message)
        assert "\n" not in message


def test_missing_and_unexpected_tensors(tmp_path, ckpts):
    from safetensors.torch import load_file, save_file

    p = _copy(ckpts["dream"], tmp_path, "missing_tensor")
    tensors = load_file(str(p / "model.safetensors"))
    tensors.pop("model.layers.1.mlp.up_proj.weight")
    save_file(tensors, str(p / "model.safetensors"))
    with pytest.raises(InfillError, match="tensor model.layers.1.mlp.up_proj.weight is missing"):
        load_family_model(p)
    tensors = load_file(str(ckpts["dream"].path / "model.safetensors"))
    tensors["model.layers.0.self_attn.q_norm.weight"] = torch.ones(16)
    save_file(tensors, str(p / "model.safetensors"))
    with pytest.raises(InfillError, match="q_norm.weight has no place in the dream family"):
        load_family_model(p)


def test_dual_cache_is_exact_until_the_canvas_changes(ckpts):
    """The cached pass must reproduce the exact logits while the context keys/values are
    fresh (canvas unchanged since the refresh), drift once canvas tokens are committed,
    and come back to exact on the refresh a new block length triggers."""
    for family in ("dream", "llada", "open_dcoder"):
        model, tok, _ = load_family_model(ckpts[family].path, cache_policy="block")
        exact, _, _ = load_family_model(ckpts[family].path, cache_policy="exact")
        prefix, suffix = tok.encode("for i in range(10):\n    "), tok.encode("\nprint(i)\n")
        ctx, ref_ctx = model.encode_context(prefix, suffix), exact.encode_context(prefix, suffix)
        canvas = torch.full((1, 8), tok.mask_id)
        first = model.canvas_logits(ctx, canvas)  # refresh
        assert ctx.refreshes == 1 and rel_err(first, exact.canvas_logits(ref_ctx, canvas)) <= REL_TOL
        again = model.canvas_logits(ctx, canvas)  # cached, context still fresh
        assert ctx.cached_passes == 1 and rel_err(again, first) <= REL_TOL
        canvas[0, :4] = torch.tensor(tok.encode("print(i * i)")[:4])
        cached = model.canvas_logits(ctx, canvas)  # stale context keys/values
        reference = exact.canvas_logits(ref_ctx, canvas)
        drift = rel_err(cached, reference)
        assert 0 < drift < 0.5, drift
        assert ctx.cached_context_tokens == 2 * (len(ctx.head) + len(ctx.tail) - (1 if model.spec.shift_logits else 0))
        grown = torch.cat([canvas, torch.full((1, 4), tok.mask_id)], dim=1)  # next block
        assert rel_err(model.canvas_logits(ctx, grown), exact.canvas_logits(ref_ctx, grown)) <= REL_TOL
        assert ctx.refreshes == 2


def test_refresh_every_k_passes(ckpts):
    model, tok, _ = load_family_model(ckpts["dream"].path, cache_policy="every:2")
    ctx = model.encode_context(tok.encode("a = "), [])
    canvas = torch.full((1, 4), tok.mask_id)
    for _ in range(5):
        model.canvas_logits(ctx, canvas)
    assert (ctx.refreshes, ctx.cached_passes) == (3, 2)
    assert CachePolicy.parse("every:3").refresh_every == 3 and CachePolicy.parse("exact").exact
    with pytest.raises(InfillError, match="unknown cache policy"):
        load_family_model(ckpts["dream"].path, cache_policy="sometimes")


def test_quantization_name_is_checked(ckpts):
    with pytest.raises(InfillError, match="unknown quantization 'q3'"):
        load_family_model(ckpts["dream"].path, quantization="q3")


def test_models_cli_lists_families_and_identifies_directories(ckpts, capsys, tmp_path):
    from engine.families.describe import main

    assert main([]) == 0
    listing = capsys.readouterr().out
    for name in ("dream", "llada", "open_dcoder"):
        assert name in listing
    assert main(["--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["family"] for r in rows} == {"dream", "llada", "open_dcoder"}
    llada = next(r for r in rows if r["family"] == "llada")
    # LLaDA-8B: 8.02 B parameters; bf16 weights ~14.9 GiB, NF4 about a third of that.
    assert 8.0 < llada["memory_gib"]["params_b"] < 8.05 and 14.5 < llada["memory_gib"]["bf16"] < 15.2
    assert llada["memory_gib"]["nf4"] < llada["memory_gib"]["int8"] < llada["memory_gib"]["bf16"]
    assert main(["--markdown"]) == 0 and "`<\\|mask\\|>`" in capsys.readouterr().out  # pipes escaped
    assert main([str(ckpts["llada"].path), "--json", "--load"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["family"] == "llada" and info["mask_id"] == load_family_model(ckpts["llada"].path)[1].mask_id
    assert main([str(tmp_path / "nowhere")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_fidelity_measurement(ckpts):
    from lab.families.fidelity import measure_policy

    model, tok, _ = load_family_model(ckpts["dream"].path)
    prompts = [(tok.encode("def add(a, b):\n    "), tok.encode("\n")), (tok.encode("x = "), [])]
    exact = measure_policy(model, CachePolicy.parse("exact"), prompts, max_tokens=12, block=4, per_pass=2)
    assert exact.max_rel_err == 0.0 and exact.same_middle == 1.0 and exact.top1_agreement == 1.0
    block = measure_policy(model, CachePolicy.parse("block"), prompts, max_tokens=12, block=4, per_pass=2)
    assert block.passes > 0 and 0 < block.max_rel_err and block.refreshes_per_infill <= 3
    every2 = measure_policy(model, CachePolicy.parse("every:2"), prompts, max_tokens=12, block=4, per_pass=2)
    assert block.refreshes_per_infill <= every2.refreshes_per_infill <= exact.refreshes_per_infill


def test_tied_embeddings_checkpoint(tmp_path):
    """Qwen2.5-Coder-0.5B (Open-dCoder's base) ties lm_head to the embedding: logits then
    use the embedding matrix, with or without a stored copy of the head."""
    from safetensors.torch import load_file, save_file

    ck = make_tiny_checkpoint("open_dcoder", tmp_path / "tied", seed=3)
    ck.reference.lm_head.weight = ck.reference.model.embed_tokens.weight  # tie the reference
    _edit_config(ck.path, tie_word_embeddings=True)
    tensors = load_file(str(ck.path / "model.safetensors"))
    head = tensors.pop("lm_head.weight")
    save_file(tensors, str(ck.path / "model.safetensors"))
    model, tok, _ = load_family_model(ck.path)
    assert model.net.lm_head is None
    ids = torch.randint(0, tok.vocab_size, (1, 12), generator=torch.Generator().manual_seed(0))
    hidden, _ = model.net(ids, torch.arange(12))
    assert rel_err(model.net.logits(hidden), reference_logits(ck, ids)) <= REL_TOL
    tensors["lm_head.weight"] = head
    save_file(tensors, str(ck.path / "model.safetensors"))
    load_family_model(ck.path)  # a stored head copy is tolerated


def test_bf16_load_tracks_fp32(ckpts):
    """The accelerator default dtype: bf16 weights and activations, float32 logits."""
    fp32, tok, _ = load_family_model(ckpts["llada"].path, cache_policy="exact")
    bf16, _, info = load_family_model(ckpts["llada"].path, dtype="bf16", cache_policy="block")
    assert info["dtype"] == "bfloat16" and bf16.net.embed.weight.dtype == torch.bfloat16
    prefix, suffix = tok.encode("while queue:\n    "), tok.encode("\n")
    canvas = torch.full((1, 6), tok.mask_id)
    a = fp32.canvas_logits(fp32.encode_context(prefix, suffix), canvas)
    ctx = bf16.encode_context(prefix, suffix)
    b = bf16.canvas_logits(ctx, canvas)
    assert b.dtype == torch.float32 and rel_err(b, a) < 0.05
    assert rel_err(bf16.canvas_logits(ctx, canvas), b) < 0.02  # cached pass, bf16 buffers


def test_pass_timing_helper():
    from lab.families.fidelity import pass_times_ms, synthetic_model

    model = synthetic_model(layers=1, hidden=64, vocab=512)
    times = pass_times_ms(model, list(range(10, 60)), list(range(10, 30)), canvas_len=4, repeats=1)
    assert set(times) == {"exact", "block"} and all(t > 0 for t in times.values())


def test_toy_training_runs_and_learns():
    from lab.families.toy import code_texts, held_out_prompts, train_toy_model

    texts = code_texts(Path(__file__).resolve().parent.parent / "engine", limit_chars=40_000)
    model, tok, held, losses = train_toy_model(texts, steps=6, seq_len=32, batch=4)
    assert len(losses) == 6 and losses[-1] < losses[0]  # a few AdamW steps already lower it
    prompts = held_out_prompts(held, n=2, prefix_len=8, middle_len=4, suffix_len=8, bos=tok.bos_id)
    assert all(p[0] == tok.bos_id and len(p) == 9 and len(s) == 8 for p, s in prompts)
    assert model.canvas_logits(model.encode_context(*prompts[0]), torch.full((1, 4), tok.mask_id)).shape == (1, 4, model.net.cfg.vocab_size)
