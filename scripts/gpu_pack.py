"""Pack what a lent GPU needs to train the embedded model: the corpus, compressed.

    python scripts/gpu_pack.py [--corpus data/corpus] [--out gpu_pack]

The device machine reaches nothing outside it and takes at most 64 MiB of working tree,
so the corpus travels as an xz-compressed tar (`carry=["gpu_pack"]`). A corpus whose
archive would not fit (the grown corpus of docs/corpus.md is ~4x the old one) is
subsampled by file, seeded, to fit: the validation split always travels whole, and
what was left out is printed. Then run scripts/gpu_train.sh there (its header says how).
"""
import argparse
import json
import random
import sys
import tarfile
import tempfile
from pathlib import Path

LIMIT = 40 * 2**20  # leave room under the 64 MiB for the tracked tree (~18 MB)

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--corpus", type=Path, default=Path("data/corpus"))
parser.add_argument("--out", type=Path, default=Path("gpu_pack"))
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()
missing = [n for n in ("train.jsonl", "valid.jsonl") if not (args.corpus / n).exists()]
if missing:
    sys.exit(f"error: {args.corpus} lacks {', '.join(missing)}; build it with `python -m lab corpus --out {args.corpus}`")
args.out.mkdir(parents=True, exist_ok=True)
target = args.out / "corpus.tar.xz"
(args.out / "corpus.tar.gz").unlink(missing_ok=True)  # the older packing
lines = (args.corpus / "train.jsonl").read_text().splitlines()
random.Random(args.seed).shuffle(lines)
fraction = 1.0
with tempfile.TemporaryDirectory() as tmp:
    for attempt in range(4):
        keep = lines[: max(1, int(len(lines) * fraction))]
        (Path(tmp) / "train.jsonl").write_text("\n".join(keep) + "\n")
        with tarfile.open(target, "w:xz", preset=6) as tar:
            tar.add(Path(tmp) / "train.jsonl", arcname="corpus/train.jsonl")
            for name in ("valid.jsonl", "summary.json"):
                if (args.corpus / name).exists():
                    tar.add(args.corpus / name, arcname=f"corpus/{name}")
        size = target.stat().st_size
        if size <= LIMIT:
            break
        fraction *= 0.95 * LIMIT / size
    else:
        sys.exit(f"error: {target} is still over {LIMIT / 2**20:.0f} MiB")
mb = sum(len(l) for l in keep) / 1e6
print(f"{target}: {size / 2**20:.1f} MiB; train files {len(keep)} of {len(lines)} ({mb:.0f} MB of JSON lines), validation whole")
(args.out / "packed.json").write_text(json.dumps({"train_files": len(keep), "of": len(lines), "seed": args.seed}) + "\n")
