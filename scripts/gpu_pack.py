"""Pack what a lent GPU needs to train the embedded model: the corpus, compressed.

    python scripts/gpu_pack.py [--corpus data/corpus] [--out gpu_pack]

The device machine reaches nothing outside it and takes at most 64 MiB of working tree,
so the corpus (58 MB of JSON lines) travels as a tar.gz (`carry=["gpu_pack"]`); the model
to continue from is engine/default_model, which is tracked and travels anyway. Then run
scripts/gpu_train.sh there (its header says how).
"""
import argparse
import sys
import tarfile
from pathlib import Path

LIMIT = 40 * 2**20  # leave room under the 64 MiB for the tracked tree (~18 MB)

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--corpus", type=Path, default=Path("data/corpus"))
parser.add_argument("--out", type=Path, default=Path("gpu_pack"))
args = parser.parse_args()
names = ["train.jsonl", "valid.jsonl", "summary.json", "files.tsv"]
missing = [n for n in names[:2] if not (args.corpus / n).exists()]
if missing:
    sys.exit(f"error: {args.corpus} lacks {', '.join(missing)}; build it with `infill corpus --out {args.corpus}`")
args.out.mkdir(parents=True, exist_ok=True)
target = args.out / "corpus.tar.gz"
with tarfile.open(target, "w:gz", compresslevel=6) as tar:
    for name in names:
        if (args.corpus / name).exists():
            tar.add(args.corpus / name, arcname=f"corpus/{name}")
size = target.stat().st_size
print(f"{target}: {size / 2**20:.1f} MiB")
if size > LIMIT:
    sys.exit(f"error: {target} is over {LIMIT / 2**20:.0f} MiB; the device call would refuse the working tree")
