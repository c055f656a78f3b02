"""Cut the held-out single-line benchmark items from the corpus's validation split.

    python scripts/make_bench_data.py --corpus data/corpus --out lab/bench_data/heldout_lines.jsonl
    python scripts/make_bench_data.py --seed 11 --python 240 --javascript 120 --exclude lab/bench_data/heldout_lines.jsonl \
        --out lab/bench_data/dev_lines.jsonl

The dev set (seed 11) holds other lines of the same validation files; sampler knobs are
chosen on it, so the held-out figures are not tuned on.

Validation files are chosen by hash of their path (lab/training/corpus.py) and never
trained on. Each item: one non-blank line (with its newline) is the middle; up to 3,000
characters before it are the prefix and up to 1,500 after it the suffix.
"""
import argparse
import json
import random
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("--corpus", type=Path, default=Path("data/corpus"))
parser.add_argument("--out", type=Path, default=Path("lab/bench_data/heldout_lines.jsonl"))
parser.add_argument("--python", type=int, default=120)
parser.add_argument("--javascript", type=int, default=60)
parser.add_argument("--seed", type=int, default=7, help="7 = the held-out benchmark; 11 = the dev set sampler knobs are tuned on")
parser.add_argument("--exclude", type=Path, default=None, help="skip items of this file (the dev set excludes the held-out set)")
args = parser.parse_args()
excluded = set()
if args.exclude:
    excluded = {(j["source"], j["prefix"][-200:], j["middle"]) for j in map(json.loads, open(args.exclude))}
docs = [json.loads(l) for l in open(args.corpus / "valid.jsonl")]
rng = random.Random(args.seed)
items = []
for language, count in (("python", args.python), ("javascript", args.javascript)):
    pool = [d for d in docs if d["language"] == language]
    while sum(1 for i in items if i["language"] == language) < count:
        doc = rng.choice(pool)
        lines = doc["text"].splitlines(keepends=True)
        idx = rng.randrange(len(lines))
        line = lines[idx]
        if not line.strip() or len(line) > 120 or line.strip().startswith(("#", "//", "*", "/*")):
            continue
        offset = sum(len(l) for l in lines[:idx])
        text = doc["text"]
        if (f"{doc['source']}/{doc['path']}", text[max(0, offset - 3000) : offset][-200:], line) in excluded:
            continue
        items.append({"id": f"{language}-{len(items)}", "language": language, "source": f"{doc['source']}/{doc['path']}", "prefix": text[max(0, offset - 3000) : offset], "middle": line, "suffix": text[offset + len(line) : offset + len(line) + 1500]})
rng.shuffle(items)
args.out.parent.mkdir(parents=True, exist_ok=True)
with open(args.out, "w") as fh:
    for item in items:
        fh.write(json.dumps(item) + "\n")
print(f"{len(items)} items -> {args.out}")
