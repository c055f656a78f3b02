"""`infill models`: the checkpoint families infill can load, or what it makes of a directory.

    infill models                 table of families
    infill models --markdown      the same as the Markdown table in docs/families.md
    infill models --json          machine-readable
    infill models DIR [--load]    which family DIR is, its shape and memory needs
                                  (--load also reads the weights and checks them)
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional, Sequence

from engine.families.arch import ArchConfig, arch_from_config
from engine.families.memory import estimate
from engine.families.spec import FamilySpec, all_families
from engine.types import InfillError


def reference_arch(spec: FamilySpec) -> Optional[ArchConfig]:
    ref = spec.reference
    try:
        return ArchConfig(
            hidden_size=int(ref["hidden_size"]),
            num_layers=int(ref["num_layers"]),
            num_heads=int(ref["num_heads"]),
            num_kv_heads=int(ref["num_kv_heads"]),
            head_dim=int(ref["hidden_size"]) // int(ref["num_heads"]),
            ffn_hidden=int(ref["ffn_hidden"]),
            vocab_size=int(ref["vocab_size"]),
            norm_eps=1e-6,
            rope_theta=10000.0,
            tie_embeddings=bool(ref.get("tie_embeddings", False)),
            qkv_bias=bool(spec.defaults.get("qkv_bias", False)),
        )
    except (KeyError, ValueError):
        return None


def family_rows() -> list[dict]:
    rows = []
    for spec in all_families():
        arch = reference_arch(spec)
        mem = estimate(arch) if arch else {}
        rows.append(
            {
                "family": spec.name,
                "models": spec.title,
                "model_type": ", ".join(spec.model_types),
                "shift_logits": spec.shift_logits,
                "mask": (spec.tokens["mask"] or ("id %d" % spec.default_ids.get("mask", -1),))[0],
                "layout": " ".join(list(spec.before_prefix) + ["prefix", "[canvas]", "suffix"] + list(spec.after_suffix)),
                "licence": spec.licence,
                "reference": spec.reference.get("reference", ""),
                "memory_gib": {k: round(v, 2) for k, v in mem.items()},
                "examples": list(spec.examples),
            }
        )
    return rows


def markdown_table(rows: list[dict]) -> str:
    head = "| family | models | config `model_type` | mask | prompt layout | logit shift | licence | reference | params | bf16 | int8 | NF4 | int4 | dual cache @2K |\n"
    head += "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    lines = []
    cell = lambda text: str(text).replace("|", "\\|")  # a bare | would split the table cell
    for r in rows:
        m = r["memory_gib"]
        lines.append(
            f"| {r['family']} | {cell(r['models'])} | `{r['model_type']}` | `{cell(r['mask'])}` | {r['layout']} | {'yes' if r['shift_logits'] else 'no'} | {cell(r['licence'])} | {r['reference']} "
            f"| {m.get('params_b', 0):.2f} B | {m.get('bf16', 0):.1f} GiB | {m.get('int8', 0):.1f} GiB | {m.get('nf4', 0):.1f} GiB | {m.get('int4', 0):.1f} GiB | {m.get('kv_cache', 0):.2f} GiB |"
        )
    return head + "\n".join(lines)


def describe_dir(path: Path, load: bool) -> dict:
    from engine.families import detect_family, load_family_model

    spec, config = detect_family(path)
    arch = arch_from_config(spec, config, path / "config.json")
    out: dict = {"family": spec.name, "title": spec.title, "path": str(path), "params_b": round(arch.num_parameters() / 1e9, 4)}
    out["memory_gib"] = {k: round(v, 3) for k, v in estimate(arch).items()}
    from engine.families.checkpoint import tensor_locations

    where = tensor_locations(path)  # checks the index and that every shard is there
    out["weights"] = f"{len(where)} tensors in {len(set(where.values()))} file(s)"
    if load:
        _, tok, info = load_family_model(path)
        out.update(info)
        out["tokenizer_vocab"] = tok.vocab_size
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="infill models", description="Model families infill can load from a local directory.")
    parser.add_argument("path", nargs="?", help="a checkpoint directory to identify")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--markdown", action="store_true", help="print the docs/families.md table")
    parser.add_argument("--load", action="store_true", help="with PATH: also load the weights and tokenizer")
    args = parser.parse_args(list(argv) if argv is not None else None)
    try:
        if args.path:
            info = describe_dir(Path(args.path), args.load)
            if args.json:
                print(json.dumps(info, indent=2))
            else:
                for key, value in info.items():
                    print(f"{key:>16}: {value}")
            return 0
        rows = family_rows()
        if args.json:
            print(json.dumps(rows, indent=2))
        elif args.markdown:
            print(markdown_table(rows))
        else:
            print("infill's own models: a directory whose config.json has a \"model\" section")
            print("open checkpoint families (from a local directory; nothing is downloaded):")
            for r in rows:
                m = r["memory_gib"]
                print(f"  {r['family']:<12} {r['models']}  [model_type: {r['model_type']}]")
                print(f"  {'':<12} layout: {r['layout']}; licence: {r['licence']}")
                if m:
                    print(f"  {'':<12} {r['reference']}: {m['params_b']:.2f} B params, weights bf16 {m['bf16']:.1f} GiB, int8 {m['int8']:.1f} GiB, NF4 {m['nf4']:.1f} GiB")
        return 0
    except InfillError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
