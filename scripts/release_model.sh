#!/usr/bin/env bash
# Publish a trained run as the embedded model and measure it: every figure the README,
# the model card and docs/sampler.md quote is written by this script to $OUT.
#
#   [CORPUS=DIR] scripts/release_model.sh [RUN_DIR]    (default runs/main; CORPUS: the run's corpus, default data/corpus)
#
# Two lanes run side by side (one torch thread each, 2 cores): lane A evaluates
# HumanEval (full precision, then int8 and int4), lane B the speed and quality benches.
# Speed figures are ratios measured within one process, so the other lane slows both
# sides of each ratio alike; absolute milliseconds are a little pessimistic.
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=${1:-runs/main}
OUT=$RUN/release
PY=${PYTHON:-.venv/bin/python}
export OMP_NUM_THREADS=1
mkdir -p "$OUT"
step() { echo "== $(date +%H:%M:%S) $*" >&2; }

step "average the last checkpoints (kept only if better on validation)"
$PY -m lab.training.average --run "$RUN" --write | tee "$OUT/average.json.txt" || echo "no checkpoint average (fewer than 2 snapshots)" >&2

step publish
$PY -m lab.training.publish "$RUN/model"
rm -rf "$OUT/int8" "$OUT/int4"
$PY -m infill_lsp.cli quantize engine/default_model "$OUT/int8" --bits 8
$PY -m infill_lsp.cli quantize engine/default_model "$OUT/int4" --bits 4 --group-size 64

lane_a() {
  step "A: humaneval (engine + oracle length)"
  $PY -m lab eval humaneval --out "$OUT/eval_humaneval.json" --json > /dev/null
  step "A: humaneval int8"
  $PY -m lab eval humaneval --model "$OUT/int8" --modes engine --out "$OUT/eval_int8.json" --json > /dev/null
  step "A: humaneval int4"
  $PY -m lab eval humaneval --model "$OUT/int4" --modes engine --out "$OUT/eval_int4.json" --json > /dev/null
  step "A: sweep";        $PY -m lab.evaluation.sweep --limit 120 --knobs contiguous,left_to_right,confidence_threshold,block_size,copy_weight,constrained --out "$OUT/sweep.json"
  step "A: done"
}
lane_b() {
  step "B: bench";        $PY -m lab bench --json --limit 60 > "$OUT/bench.json"
  step "B: heldout";      $PY -m lab eval heldout --out "$OUT/eval_heldout.json" --json > /dev/null
  step "B: syntax bench"; $PY -m lab.syntax_bench.bench --json > "$OUT/syntax_bench.json"  # all 477 tasks
  step "B: next-edit";    $PY -m lab eval next-edit --limit 15 --out "$OUT/eval_next_edit.json" --json > /dev/null
  step "B: typing bench"; $PY -m lab.loadtest.typing_replay --chars 200 --interval-ms 120 --json "$OUT/typing_bench.json" > "$OUT/typing_bench.txt"
  step "B: quant exact";  $PY -m lab.quant.exact --limit 60 --json > "$OUT/quant_exact.json"
  step "B: done"
}
lane_a > "$OUT/lane_a.log" 2>&1 &
a=$!
lane_b > "$OUT/lane_b.log" 2>&1 &
b=$!
wait $a; wait $b

step model-card
$PY - "$OUT" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
report = json.loads((out / "eval_humaneval.json").read_text())
report["heldout_exact_match"] = json.loads((out / "eval_heldout.json").read_text()).get("heldout_exact_match", {})
(out / "eval.json").write_text(json.dumps(report, indent=2) + "\n")
PY
$PY -m lab.training.model_card --run "$RUN" --corpus "${CORPUS:-data/corpus}" --eval "$OUT/eval.json" --bench "$OUT/bench.json"
step done
