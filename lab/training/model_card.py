"""Write engine/default_model/MODEL_CARD.md from what the run recorded.

    python -m lab.training.model_card --run runs/main --eval runs/main/eval.json --bench runs/main/bench.json

Every figure in the card comes from a file: the model's config.json (training record),
the run's log.jsonl (validation curve), the corpus summary and listing, and the JSON
reports of `python -m lab eval` and `python -m lab bench`.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from engine.api import DEFAULT_MODEL_DIR
from engine.model import InfillTransformer, ModelConfig
from engine.modeldir import read_config


def _validation_curve(log_path: Path) -> list[dict]:
    points = []
    if log_path.exists():
        for line in log_path.read_text().splitlines():
            entry = json.loads(line)
            if "validation" in entry:
                points.append(entry["validation"])
    return points


def _trend(curve: list[dict]) -> str:
    """How the validation losses moved over the second half of training, per 10M tokens
    (each end averaged over three evaluations: the set is fixed but small)."""
    if len(curve) < 8:
        return "too few validation points to read a trend"
    half = [p for p in curve if p["tokens"] >= curve[-1]["tokens"] / 2] or curve
    if len(half) < 6:
        half = curve[-6:]
    head, tail = half[:3], half[-3:]

    def mean(points: list[dict], key: str) -> float:
        return sum(p[key] for p in points) / len(points)

    span = (mean(tail, "tokens") - mean(head, "tokens")) / 1e7
    parts = []
    for key, label in (("masked_ce", "masked CE"), ("ar_loss", "next-token CE")):
        a, b = mean(head, key), mean(tail, key)
        parts.append(f"{label} {a:.2f} -> {b:.2f} ({(b - a) / span:+.2f} per 10M tokens)" if span > 0 else f"{label} {b:.2f}")
    return f"over the last {mean(tail, 'tokens') / 1e6 - mean(head, 'tokens') / 1e6:.0f}M tokens: " + "; ".join(parts)


def _corpus_table(corpus: Path) -> str:
    """Per language and per source, from summary.json (corpora that write one); older
    corpora: file counts per source from files.tsv."""
    summary_path = corpus / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    if "sources" in summary:
        lines = ["| language | train files | validation files | MB | mean weight | share of sampled examples |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
        lines += [f"| {lang} | {v['train']} | {v['valid']} | {v['mb']:.1f} | {v['mean_weight']:.2f} | {v['sampling_share']:.1%} |" for lang, v in summary["languages"].items()]
        lines += ["", "| source | languages | train files | validation files | MB | near-duplicates dropped |", "| --- | --- | ---: | ---: | ---: | ---: |"]
        lines += [f"| {s} | {', '.join(v['languages'])} | {v['train']} | {v['valid']} | {v['mb']:.2f} | {v['near_duplicates']} |" for s, v in summary["sources"].items()]
        return "\n".join(lines)
    listing = corpus / "files.tsv"
    if not listing.exists():
        return "(corpus listing not available on this machine: run `python -m lab corpus`)"
    counts: Counter = Counter()
    for row in listing.read_text().splitlines()[1:]:
        split, _, source, _ = row.split("\t", 3)
        counts[(source, split)] += 1
    sources = sorted({s for s, _ in counts})
    lines = ["| source | train files | validation files |", "| --- | ---: | ---: |"]
    lines += [f"| {s} | {counts[(s, 'train')]} | {counts[(s, 'valid')]} |" for s in sources]
    return "\n".join(lines)


def _corpus_origin(summary: dict) -> str:
    """Where the corpus's files come from and under which licences: the Debian packages
    (Go and Rust, where the ISC licence comes in) only when the corpus holds some, so a
    card of an older corpus does not claim them."""
    if any(source.startswith("deb:") for source in summary.get("sources", {})):
        return "CPython 3.11.7 standard library, pinned PyPI and npm packages and pinned Debian packages for Go and Rust; PSF, MIT, BSD, ISC and Apache licences"
    return "CPython 3.11.7 standard library and pinned PyPI and npm packages; PSF, MIT, BSD and Apache licences"


def _corpus_languages(summary: dict) -> str:
    languages = summary.get("languages")
    if not languages:
        return "Python-heavy corpus; JavaScript less so; TypeScript, Go and Rust unseen in training (the grammars support them, the model barely does)."
    total = sum(v["mb"] for v in languages.values()) or 1.0
    return "Corpus by language: " + ", ".join(f"{lang} {v['mb'] / total:.0%}" for lang, v in sorted(languages.items(), key=lambda kv: -kv[1]["mb"])) + " of the bytes; the smaller languages are learned less well."


def _averaging_lines(training: dict) -> list[str]:
    """One line when the weights are a checkpoint average (lab/training/average.py)."""
    steps = training.get("averaged_steps")
    scores = training.get("averaged_validation", {})
    if not steps or "average" not in scores:
        return []
    avg, last = scores["average"], scores.get("latest", {})
    return [f"- Weights: the mean of the last {len(steps)} checkpoints (steps {', '.join(f'{s:,}' for s in steps)}), kept because it scored better on {scores.get('batches', '?')} validation batches: masked CE {avg['masked_ce']:.3f} vs {last.get('masked_ce', float('nan')):.3f} for the last checkpoint alone (`python -m lab.training.average`)."]


def _run_record(run: Path) -> dict:
    """How the run was started, from its own checkpoint (arguments and history); {} when
    there is none or it cannot be read (the card then says nothing about it)."""
    path = run / "checkpoint.pt"
    if not path.exists():
        return {}
    try:
        from .checkpoint import load_verified

        checkpoint = load_verified(path)
    except Exception:
        return {}
    return {"args": checkpoint.get("args", {}), "history": checkpoint.get("history", {})}


def _first_logged_tokens(log_path: Path, after_step: int) -> int | None:
    """Tokens seen at the run's first logged training step after `after_step`."""
    if log_path.exists():
        for line in log_path.read_text().splitlines():
            entry = json.loads(line)
            if "step" in entry and "tokens" in entry and entry["step"] > after_step:
                return int(entry["tokens"])
    return None


def _recipe_lines(run: Path, record: dict) -> list[str]:
    """Optimizer and command lines: a continuation of an earlier model (--init-from) says
    so, with what it started from, its own schedule and the corpus it went on with."""
    args = record.get("args", {})
    init_from = args.get("init_from")
    if not init_from or init_from == "None":
        return [
            "- Optimizer: AdamW (β 0.9/0.95, weight decay 0.1), peak LR 1.5e-3, warm-up 3%, cosine to 10% over the time budget; batch 16 sequences; bf16 autocast.",
            "- Command: `python -m lab train --run runs/main --heads 4 --time-budget 7200`, then resumed several times with `python -m lab train --run runs/main --resume --threads 2 --time-budget <seconds so far + new seconds>` (the cosine restarts from where the longer budget puts it; `--threads 1` while evaluations share the cores).",
        ]
    first_step = int(record.get("history", {}).get("first_step", 0))
    start_tokens = _first_logged_tokens(run / "log.jsonl", first_step)
    where = ([f"step {first_step:,}"] if first_step else []) + ([f"about {start_tokens / 1e6:.1f}M tokens seen"] if start_tokens else [])
    started = f" ({', '.join(where)})" if where else ""
    flags = f"--init-from {init_from} --corpus {args.get('corpus')} --lr {args.get('lr')} --warmup {args.get('warmup')} --batch-size {args.get('batch_size')} --time-budget {args.get('time_budget'):.0f} --clock {args.get('clock', 'wall')}{' --compile' if args.get('compile') else ''}"
    return [
        f"- Continued from the model in `{init_from}`{started}, the weights only (a fresh optimizer and schedule), on the corpus in `{args.get('corpus')}`; the steps and tokens above count from the very start.",
        f"- Optimizer: AdamW (β 0.9/0.95, weight decay 0.1), peak LR {args.get('lr')}, warm-up {args.get('warmup', 0):.0%}, cosine over the time budget ({args.get('time_budget', 0) / 3600:.2f} h of {args.get('clock', 'wall')} time); batch {args.get('batch_size')} sequences; bf16 autocast.",
        f"- Command: `python -m lab train --run {args.get('run', run)} {flags}`.",
    ]


LEARNING_CURVES = Path(__file__).resolve().parents[2] / "docs" / "measurements" / "learning_curves.json"


def curves_section(summary_path: Path = LEARNING_CURVES) -> list[str]:
    """The size-and-shape section: the learning curves of `python -m lab.training.curves`
    (plot in docs/img, figures in docs/measurements), or nothing when they were not run."""
    if not summary_path.exists():
        return []
    summary = json.loads(summary_path.read_text())
    lines = ["## Size and shape: learning curves", "",
             f"Three shapes trained from scratch with the same code and data (batch 16, head width 128, peak LR 1.5e-3 / 1.2e-3 / 1e-3 from small to large, the cosine set for a 6-hour budget, so the curves are taken near the peak LR) for the same compute each "
             f"({summary['common_hours']:.2f} h of CPU time on one core; `python -m lab.training.curves`):", "",
             "![validation loss against training hours, three model sizes](../../docs/img/learning_curves.png)", "",
             "| shape | parameters | tokens in that time | masked CE | next-token CE | masked CE slope (last third) |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in summary["runs"]:
        lines.append(f"| {r['shape']} | {r['parameters'] / 1e6:.1f}M | {r['tokens_at_end'] / 1e6:.1f}M | {r['masked_ce_at_common']:.3f} | "
                     f"{r['ar_ce_at_common']:.3f} | {r['masked_ce_slope_per_hour']:+.3f}/h |")
    best = min(summary["runs"], key=lambda r: r["masked_ce_at_common"])
    lines += ["", f"Per CPU-hour the smallest model learns most at this budget ({best['shape']} leads on both losses); the larger "
              "ones see 2-3x fewer tokens in the same time and would need several times the compute before their capacity "
              "pays off. The shipped shape stays at the small one until far more compute (a GPU run) is spent.", ""]
    return lines


def render(model_dir: Path, run: Path, corpus: Path, eval_report: dict | None, bench_report: dict | None) -> str:
    config = read_config(model_dir)
    training = config.get("training", {})
    cfg = ModelConfig.from_dict(config["model"])
    params = InfillTransformer(cfg).num_parameters()
    curve = _validation_curve(run / "log.jsonl")
    if training.get("steps"):  # a run resumed after publishing logs on: show the published model's curve
        curve = [p for p in curve if p["step"] <= training["steps"]]
    summary = json.loads((corpus / "summary.json").read_text()) if (corpus / "summary.json").exists() else {}
    record = _run_record(run)  # read once: the checkpoint holds the optimizer state too
    hours = training.get("train_seconds", 0) / 3600
    out = [
        "# infill-default: model card",
        "",
        "The small masked-diffusion code model that ships inside infill so that it works on a CPU with no downloads.",
        "",
        "## Model",
        "",
        f"- Architecture: {cfg.n_layers} layers, d_model {cfg.d_model}, {cfg.n_heads} heads, SwiGLU {cfg.ffn_hidden}, RMSNorm, RoPE (document-order positions), tied embeddings; vocabulary {cfg.vocab_size} (byte-level BPE trained on the corpus); **{params / 1e6:.2f}M parameters**.",
        "- Attention layout: sequence `[suffix | prefix | canvas]`; prefix causal, suffix bidirectional within itself, canvas sees everything (exact context cache). See engine/model.py.",
        "- Weights stored in bf16 (`model.safetensors`), computed in bf16 on a CPU that multiplies bf16 in hardware (AVX512-BF16, AMX) and in fp32 elsewhere (`INFILL_DTYPE=auto|fp32|bf16`, engine/precision.py; the same exact match both ways, docs/sampler.md \"Compute precision\").",
        "",
        "## Training",
        "",
        f"- Steps: {training.get('steps', 0):,}; tokens seen (all positions of all sequences): **{training.get('tokens_seen', 0) / 1e6:.1f}M**; hardware: {training.get('device', 'cpu')} ({'1-2 cores of a shared 2-core VM' if training.get('device', 'cpu') == 'cpu' else 'GPU'}); time: {hours:.2f} h.",
        "- Objective: masked diffusion on the canvas (cross-entropy on masked positions weighted 1/t, corrupted positions weight 1 so token-to-token edits are learned, clean positions 0.1) plus next-token loss on every prefix position (weight 0.5). Prefix and suffix are never noised.",
        *_averaging_lines(training),
        f"- Data recipe: {json.dumps(training.get('data', {}))}",
        *_recipe_lines(run, record),
        "",
        "## Corpus",
        "",
        f"Exactly the sources in `lab/training/corpus_sources.toml` ({_corpus_origin(summary)}), deduplicated by content{' and by near-duplicate detection (MinHash, Jaccard >= 0.8: ' + str(summary['near_duplicates']) + ' files dropped)' if 'near_duplicates' in summary else ''} and split by file: {summary.get('train', '?')} training files, {summary.get('valid', '?')} validation files, {summary.get('bytes', 0) / 1e6:.1f} MB. No benchmark data (HumanEval and the like) is in it, nor the packages reserved for the unseen syntax benchmark. {'Files are sampled in proportion to length ** 0.8 times a structure weight (documented functions and classes, tests and examples up; generated and data-only files down; docs/corpus.md). ' if 'languages' in summary else ''}The full file list with hashes is written by `python -m lab corpus` to `files.tsv`; docs/corpus.md summarizes it.",
        "",
        _corpus_table(corpus),
        "",
        "## Validation loss",
        "",
        f"Fixed validation set (96 examples from held-out files of `{record.get('args', {}).get('corpus', corpus)}`, noise levels spread over 0.1-0.9), at the steps of this run.",
        "",
        "| step | tokens | masked-position CE | masked accuracy | next-token CE (prefix) |",
        "| ---: | ---: | ---: | ---: | ---: |",
    ]
    shown = curve if len(curve) <= 25 else curve[:: max(1, len(curve) // 20)] + [curve[-1]]
    for p in shown:
        out.append(f"| {p['step']} | {p['tokens'] / 1e6:.1f}M | {p['masked_ce']:.3f} | {p['masked_acc']:.3f} | {p['ar_loss']:.3f} |")
    out += ["", *curves_section(), "## Evaluation", ""]
    if eval_report:
        he = eval_report.get("humaneval_single_line", {})
        if he:
            out.append(f"HumanEval single-line infilling ({he.get('tasks')} tasks, greedy pass@1, `python -m lab eval humaneval`):")
            out.append("")
            out.append("| length | pass@1 | exact match | mean ms | tokens/pass |")
            out.append("| --- | ---: | ---: | ---: | ---: |")
            for mode in ("engine", "oracle"):
                if mode in he:
                    m = he[mode]
                    out.append(f"| {'found by the engine' if mode == 'engine' else 'oracle (true token count)'} | {m['pass_at_1']}% | {m['exact_match']}% | {m['mean_ms']} | {m['tokens_per_forward']} |")
            out.append("")
        ho = eval_report.get("heldout_exact_match", {})
        if ho:
            out.append("Held-out single-line exact match (`python -m lab eval heldout`, files never trained on): " + ", ".join(f"{lang} {v['exact_match']}% of {v['items']}" for lang, v in ho.items()) + ".")
            out.append("")
    if bench_report:
        out.append(f"Sampler vs the LLaDA-style reference (`python -m lab bench --json`, {bench_report['items']} items): speedup {bench_report['speedup']}x tokens/s, {bench_report['tpf']} tokens/pass, p50 {bench_report['p50_ms']} ms, p90 {bench_report['p90_ms']} ms, exact match {bench_report['exact_match']:.1%} vs reference {bench_report['reference_exact_match']:.1%}.")
        out.append("")
    out += [
        "## Known weaknesses",
        "",
        "- Trained for a very small budget (see tokens seen): far below what a useful code model needs (hundreds of millions to billions of tokens). Expect plausible-looking but often wrong lines; it has only begun to copy identifiers from its context.",
        "- Context window: 256 prefix tokens and 96 suffix tokens (~870 and ~330 characters), the windows it was trained on and the engine's defaults for it; longer files are cut to that window around the cursor (the copy rule still looks 2048 tokens back).",
        f"- {_corpus_languages(summary)}",
        "- Not trained on edit histories yet: next-edit suggestions rely on the generic token-to-token edit ability only.",
        "",
        "## What would close the gap to the goal (HumanEval single-line pass@1 >= 30%)",
        "",
        f"- The validation curve above is still falling at the end ({_trend(curve)}): the run stopped for lack of time, not because it converged. At ~5,000 tokens/s on the 2 CPU cores, 20M tokens cost 2 hours; the published 0.5B-class diffusion code models saw hundreds of billions.",
        "- Tokens first: resume this run (`python -m lab train --run runs/main --resume`, or `--init-from engine/default_model` on a fresh machine) whenever compute is free, and on a machine with a GPU run the same command with a larger batch: at bf16 an H200 processes this 7M-parameter model at several million tokens/s, i.e. 1B+ tokens in 15 minutes.",
        "- Then size: with 1B+ tokens, a 30-60M-parameter model (d 512, 8-12 layers) fits the 40 MB limit in bf16/int8 and is still fast on a CPU with the exact context cache.",
        f"- Data: the corpus is {summary.get('bytes', 0) / 1e6:.0f} MB; more pinned packages (several GB of permissively licensed code are installable from PyPI, npm and Debian) would be needed before multi-epoch overfitting sets in at that scale.",
        "- Signal per FLOP: the next-token loss on every prefix position already multiplies the supervised positions ~5x. The sampler now copies from the context at inference (`copy_weight`, docs/sampler.md: +10 points edit similarity on the dev set); a trained pointer head would let the model decide when to copy instead of a fixed mixture.",
        "",
        "## Licence",
        "",
        "Weights: Apache-2.0, as infill. Training data: the permissively licensed sources listed above.",
        "",
    ]
    return "\n".join(out)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.training.model_card", description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL_DIR)
    parser.add_argument("--run", type=Path, default=Path("runs/main"))
    parser.add_argument("--corpus", type=Path, default=Path("data/corpus"))
    parser.add_argument("--eval", type=Path, default=None, help="JSON written by `python -m lab eval --out`")
    parser.add_argument("--bench", type=Path, default=None, help="JSON printed by `python -m lab bench --json`")
    args = parser.parse_args(argv)
    eval_report = json.loads(args.eval.read_text()) if args.eval and args.eval.exists() else None
    bench_report = json.loads(args.bench.read_text()) if args.bench and args.bench.exists() else None
    text = render(args.model, args.run, args.corpus, eval_report, bench_report)
    (args.model / "MODEL_CARD.md").write_text(text)
    print(f"wrote {args.model / 'MODEL_CARD.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
