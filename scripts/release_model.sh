#!/usr/bin/env bash
# Publish a trained run as the embedded model and measure it: every figure the README,
# the model card and docs/sampler.md quote is written by this script to $OUT.
#
#   scripts/release_model.sh [RUN_DIR]      (default runs/main)
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=${1:-runs/main}
OUT=$RUN/release
PY=${PYTHON:-.venv/bin/python}
export OMP_NUM_THREADS=1
mkdir -p "$OUT"
step() { echo "== $(date +%H:%M:%S) $*" >&2; }

step publish;        $PY -m engine.training.publish "$RUN/model"
step bench;          $PY -m engine.cli bench --json --limit 60 > "$OUT/bench.json"
step eval;           $PY -m engine.cli eval humaneval --out "$OUT/eval_humaneval.json" --json > /dev/null
step heldout;        $PY -m engine.cli eval heldout --out "$OUT/eval_heldout.json" --json > /dev/null
step syntax-bench;   $PY -m grammars.bench --json --limit 120 > "$OUT/syntax_bench.json"
step sweep;          $PY -m engine.evaluation.sweep --limit 40 --out "$OUT/sweep.json"
step typing-bench;   $PY -m infill_lsp.bench_typing --chars 200 --interval-ms 120 --json "$OUT/typing_bench.json" > "$OUT/typing_bench.txt"
step quant;          $PY -m engine.quant.eval_exact --limit 60 --json > "$OUT/quant_exact.json"
step model-card
$PY - "$OUT" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
report = json.loads((out / "eval_humaneval.json").read_text())
report["heldout_exact_match"] = json.loads((out / "eval_heldout.json").read_text()).get("heldout_exact_match", {})
(out / "eval.json").write_text(json.dumps(report, indent=2) + "\n")
PY
$PY -m engine.training.model_card --run "$RUN" --eval "$OUT/eval.json" --bench "$OUT/bench.json"
step done
