"""Tiny family checkpoints for tests and smoke runs, built with `transformers`' own classes.

`make_tiny_checkpoint(family, out_dir)` trains a small byte-level BPE, adds the family's
special tokens, builds a random Qwen2 (Dream, Open-dCoder) or LLaMA (LLaDA) model with
transformers, renames its tensors to the family's checkpoint naming — written out here
independently of the family data files, so a wrong mapping in a data file fails the
tests — and saves config.json in the family's own schema. `reference_logits` runs the
transformers model bidirectionally: the reference infill's forward pass must match.

Needs the `test` extra (transformers); nothing here downloads anything.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import torch

CORPUS = [
    "def add(a, b):\n    return a + b\n",
    "for i in range(10):\n    print(i * i)\n",
    "class Stack:\n    def __init__(self):\n        self.items = []\n\n    def push(self, x):\n        self.items.append(x)\n",
    "import os\nimport sys\n\nif __name__ == '__main__':\n    main(sys.argv)\n",
    "const total = items.reduce((sum, x) => sum + x, 0);\n",
    "fn main() {\n    let v: Vec<i32> = vec![1, 2, 3];\n    println!(\"{:?}\", v);\n}\n",
    "while queue:\n    node = queue.pop(0)\n    visited.add(node)\n",
]

# Special tokens each family's tokenizer carries (the real ones use the same strings).
FAMILY_TOKENS = {
    "dream": ["<|endoftext|>", "<|beginoftext|>", "<|mask|>"],
    "dreamon": ["<|endoftext|>", "<|beginoftext|>", "<|mask|>", "<|expand|>", "<|delete|>"],
    "llada": ["<|startoftext|>", "<|endoftext|>", "<|mdm_mask|>"],
    "open_dcoder": ["<|endoftext|>", "[MASK]"],
}

QWEN2_SPLIT = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""


@dataclass
class TinyCheckpoint:
    path: Path
    reference: Any  # the transformers model (fp32, eval mode)
    family: str
    pad_is_attended: bool


def train_tokenizer(special: list[str], vocab_size: int = 320):
    """A byte-level BPE with the Qwen2 pre-tokenizer split; special tokens get ids 0..k-1."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated"), pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(CORPUS * 4, trainer=trainer)
    return tok


def _save_tokenizer(tok, out_dir: Path, fmt: str, special: list[str]) -> None:
    if fmt == "tokenizer.json":
        tok.save(str(out_dir / "tokenizer.json"))
        return
    # vocab.json + merges.txt + tokenizer_config.json, the layout of Dream's own repos:
    # special tokens are removed from vocab.json and declared as added tokens instead.
    data = json.loads(tok.to_str())
    vocab = {t: i for t, i in data["model"]["vocab"].items() if t not in special}
    shift = len(special)
    vocab = {t: i - shift for t, i in vocab.items()}
    merges = data["model"]["merges"]
    (out_dir / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
    lines = ["#version: 0.2"] + [" ".join(m) if isinstance(m, list) else m for m in merges]
    (out_dir / "merges.txt").write_text("\n".join(lines) + "\n")
    added = {str(len(vocab) + j): {"content": t, "special": True} for j, t in enumerate(special)}
    (out_dir / "tokenizer_config.json").write_text(json.dumps({"added_tokens_decoder": added}))


def _llada_name(name: str) -> str:
    """transformers LLaMA tensor name -> LLaDA checkpoint name (modeling_llada.py)."""
    fixed = {
        "model.embed_tokens.weight": "model.transformer.wte.weight",
        "model.norm.weight": "model.transformer.ln_f.weight",
        "lm_head.weight": "model.transformer.ff_out.weight",
    }
    if name in fixed:
        return fixed[name]
    parts = name.split(".")  # model.layers.{i}.<module>...
    i, rest = parts[2], ".".join(parts[3:])
    table = {
        "input_layernorm.weight": "attn_norm.weight",
        "post_attention_layernorm.weight": "ff_norm.weight",
        "self_attn.q_proj.weight": "q_proj.weight",
        "self_attn.k_proj.weight": "k_proj.weight",
        "self_attn.v_proj.weight": "v_proj.weight",
        "self_attn.o_proj.weight": "attn_out.weight",
        "mlp.gate_proj.weight": "ff_proj.weight",
        "mlp.up_proj.weight": "up_proj.weight",
        "mlp.down_proj.weight": "ff_out.weight",
    }
    return f"model.transformer.blocks.{i}.{table[rest]}"


def _save_weights(tensors: dict[str, torch.Tensor], out_dir: Path, shards: int) -> None:
    from safetensors.torch import save_file

    tensors = {k: v.detach().contiguous().clone() for k, v in tensors.items()}
    if shards <= 1:
        save_file(tensors, str(out_dir / "model.safetensors"), metadata={"format": "pt"})
        return
    names = sorted(tensors)
    weight_map: dict[str, str] = {}
    for s in range(shards):
        part = names[s::shards]
        fname = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        save_file({k: tensors[k] for k in part}, str(out_dir / fname), metadata={"format": "pt"})
        weight_map.update({k: fname for k in part})
    (out_dir / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}, indent=1))


def make_tiny_checkpoint(
    family: str,
    out_dir: Path,
    *,
    shards: int = 1,
    seed: int = 0,
    tokenizer_format: str = "tokenizer.json",
    hidden: int = 64,
    layers: int = 2,
    heads: int = 4,
    kv_heads: Optional[int] = None,
    extra_rows: int = 24,
    vocab_rows: Optional[int] = None,
    config_mask_id: bool = True,
) -> TinyCheckpoint:
    """family: dream | dreamon | llada | open_dcoder. Returns the directory and the
    transformers model it was saved from."""
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    out_dir.mkdir(parents=True, exist_ok=True)
    special = list(FAMILY_TOKENS[family])
    if family == "llada" and not config_mask_id:
        special.remove("<|mdm_mask|>")  # exercise the family's default mask id
    tok = train_tokenizer(special)
    _save_tokenizer(tok, out_dir, tokenizer_format, special)
    ids = _special_ids(out_dir, tok, special, tokenizer_format)  # vocab.json moves them after the vocab
    rows = vocab_rows or (tok.get_vocab_size() + extra_rows)
    ffn = hidden * 3 // 2
    torch.manual_seed(seed)
    eos = ids.get("<|endoftext|>")
    if family == "llada":
        kv = kv_heads or heads  # LLaDA-8B has no grouped-query attention
        hf_cfg = LlamaConfig(vocab_size=rows, hidden_size=hidden, intermediate_size=ffn, num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv, rms_norm_eps=1e-5, rope_theta=10000.0, max_position_embeddings=4096, tie_word_embeddings=False, attention_bias=False, mlp_bias=False)
        hf_cfg._attn_implementation = "eager"
        model = LlamaForCausalLM(hf_cfg)
        tensors = {_llada_name(k): v for k, v in model.state_dict().items()}
        config: dict[str, Any] = {
            "architectures": ["LLaDAModelLM"], "model_type": "llada", "activation_type": "silu", "alibi": False,
            "attention_layer_norm": False, "block_type": "llama", "d_model": hidden, "n_heads": heads, "n_kv_heads": kv,
            "n_layers": layers, "mlp_hidden_size": ffn, "embedding_size": rows, "vocab_size": rows, "include_bias": False,
            "include_qkv_bias": False, "input_emb_norm": False, "layer_norm_type": "rms", "rms_norm_eps": 1e-5, "rope": True,
            "rope_theta": 10000.0, "scale_logits": False, "weight_tying": False, "eos_token_id": eos, "pad_token_id": eos,
            "max_sequence_length": 4096, "torch_dtype": "bfloat16",
        }
        if config_mask_id:
            config["mask_token_id"] = ids["<|mdm_mask|>"]
    else:
        kv = kv_heads or max(1, heads // 2)  # Qwen2 uses grouped-query attention
        hf_cfg = Qwen2Config(vocab_size=rows, hidden_size=hidden, intermediate_size=ffn, num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv, rms_norm_eps=1e-6, rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, max_position_embeddings=4096, tie_word_embeddings=False)
        hf_cfg._attn_implementation = "eager"
        model = Qwen2ForCausalLM(hf_cfg)
        tensors = dict(model.state_dict())  # Dream / Open-dCoder checkpoints use these names
        config = {
            "hidden_size": hidden, "intermediate_size": ffn, "num_hidden_layers": layers, "num_attention_heads": heads,
            "num_key_value_heads": kv, "max_position_embeddings": 4096, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
            "rope_scaling": None, "tie_word_embeddings": False, "vocab_size": rows, "hidden_act": "silu",
            "use_sliding_window": False, "torch_dtype": "bfloat16", "eos_token_id": eos, "pad_token_id": eos,
        }
        if family in ("dream", "dreamon"):
            config.update({"architectures": ["DreamModel"], "model_type": "Dream", "bos_token_id": eos, "mask_token_id": ids["<|mask|>"]})
        else:  # Open-dCoder: a plain qwen2 config; the mask token lives in the tokenizer.
            # Like the real one (Qwen2.5-Coder's), it names <|endoftext|> as bos_token_id,
            # although Open-dLLM's infill prompt puts no token in front of the prefix.
            config.update({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "bos_token_id": eos})
            (out_dir / "special_tokens_map.json").write_text(json.dumps({"mask_token": "[MASK]", "pad_token": "<|endoftext|>"}))
    model.eval()
    (out_dir / "config.json").write_text(json.dumps(config, indent=1))
    _save_weights(tensors, out_dir, shards)
    return TinyCheckpoint(out_dir, model, family, pad_is_attended=(family != "open_dcoder"))


def _special_ids(out_dir: Path, tok, special: list[str], fmt: str) -> dict[str, int]:
    if fmt == "tokenizer.json":
        return {t: tok.token_to_id(t) for t in special}
    added = json.loads((out_dir / "tokenizer_config.json").read_text())["added_tokens_decoder"]
    return {v["content"]: int(k) for k, v in added.items()}


@torch.no_grad()
def reference_logits(ckpt: TinyCheckpoint, ids: torch.Tensor, pad_id: Optional[int] = None) -> torch.Tensor:
    """(B, T) ids -> (B, T, V) logits of the transformers model with *bidirectional*
    attention: an explicit 4-D additive mask of zeros replaces the causal one (and hides
    pad keys where the family's sampler does)."""
    B, T = ids.shape
    bias = torch.zeros(B, 1, T, T)
    if not ckpt.pad_is_attended and pad_id is not None:
        bias = bias.masked_fill((ids == pad_id)[:, None, None, :], torch.finfo(torch.float32).min)
    return ckpt.reference(input_ids=ids, attention_mask=bias, position_ids=torch.arange(T).expand(B, T)).logits.float()


# Prompt layout of each family, stated here independently of the data files:
# (tokens before the prefix, tokens after the suffix, logits shifted by one).
REFERENCE_LAYOUT = {
    "dream": (["<|beginoftext|>"], ["<|endoftext|>"], True),
    "dreamon": (["<|beginoftext|>"], ["<|endoftext|>"], True),
    "llada": (["<|startoftext|>"], [], False),
    "open_dcoder": ([], [], True),
}


class ReferenceDenoiser:
    """A DenoisingModel whose every pass is the transformers model's full bidirectional
    forward over the family's infill prompt: the uncached reference the engine's sampler
    can run against, to check infill's adapter end to end."""

    def __init__(self, ckpt: TinyCheckpoint, tokenizer, pad_id: Optional[int] = None):
        lead, trail, shift = REFERENCE_LAYOUT[ckpt.family]
        hf = tokenizer.hf
        self.ckpt, self.shift, self.pad_id = ckpt, shift, pad_id
        self.lead = [hf.token_to_id(t) for t in lead]
        self.trail = [hf.token_to_id(t) for t in trail]
        self.vocab = hf.get_vocab_size(with_added_tokens=True)

    def encode_context(self, prefix_ids: list[int], suffix_ids: list[int], reuse: object = None) -> tuple[list[int], list[int]]:
        prefix = list(prefix_ids)
        if self.lead and prefix[: len(self.lead)] == self.lead:
            prefix = prefix[len(self.lead) :]
        return self.lead + prefix, list(suffix_ids) + self.trail

    def canvas_logits(self, cache: tuple[list[int], list[int]], canvas_ids: torch.Tensor) -> torch.Tensor:
        head, tail = cache
        B, N = canvas_ids.shape
        seq = torch.cat([torch.tensor(head, dtype=torch.long).expand(B, -1), canvas_ids.cpu(), torch.tensor(tail, dtype=torch.long).expand(B, -1)], dim=1)
        logits = reference_logits(self.ckpt, seq, self.pad_id)
        P = len(head)
        rows = [max(P + j - 1, 0) for j in range(N)] if self.shift else [P + j for j in range(N)]
        out = logits[:, rows]
        out[..., self.vocab :] = float("-inf")
        return out
