#!/usr/bin/env bash
# The concurrency sweep on a lent GPU: the same command as on the CPU
# (`python -m lab bench --concurrency ...`, lab/concurrency/sweep.py) with --device cuda, for
#   1. the embedded model (its real tokens per pass and exact match), fp32;
#   2. the Open-dCoder 0.5B shapes, random weights, bf16 (speed only);
#   3. the Dream-Coder 7B shapes, random weights, bf16 (speed only), fewer levels.
# Random weights commit one token per pass at best and never close a middle early, so
# 2 and 3 show per-pass cost against concurrency in diffusion's worst case
# (lab/concurrency/shapes/README.md); the syntax check is off for them (CPU time only).
#
#   device call:  run(command="bash scripts/gpu_concurrency.sh", timeout_s=560)
#   back here:    <files_at>/concurrency_*.json and .png; copy them to docs/measurements/
#                 and docs/ (they are the --json reports of the sweep, one per part).
#   dry run here: DEVICE=cpu LEVELS=1,2 BIG_LEVELS=1,2 REQUESTS=2 SHAPES_SMALL=1 bash scripts/gpu_concurrency.sh
#
# Each part has its own time limit and writes its report as soon as it ends, so a run cut
# short still brings back what finished. Needs torch, tokenizers, safetensors, tree-sitter
# (for part 1's syntax check) and matplotlib (plots; without it the JSON still comes back).
set -uo pipefail
DEVICE=${DEVICE:-cuda}
LEVELS=${LEVELS:-1,2,4,8,16,32,64}
BIG_LEVELS=${BIG_LEVELS:-1,4,16,64}
REQUESTS=${REQUESTS:-24}
BIG_REQUESTS=${BIG_REQUESTS:-16}
OUT=${OUT:-/tmp/infill_gpu_out}
PY=${PYTHON:-python3}
PART_S=${PART_S:-170}   # seconds each part may take
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1

{ command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total,clocks.sm --format=csv; } > "$OUT/gpu.txt"
$PY -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())" | tee -a "$OUT/gpu.txt" || exit 3
$PY -c "import matplotlib" 2> /dev/null && PLOT=1 || { PLOT=0; echo "no matplotlib: JSON only" | tee -a "$OUT/gpu.txt"; }

shapes_small=lab/concurrency/shapes/open-dcoder-0.5b.json
shapes_big=lab/concurrency/shapes/dream-7b.json
if [ "${SHAPES_SMALL:-0}" = 1 ]; then  # the dry run: a tiny shape file instead of the real ones
    printf '{"vocab_size": 8192, "d_model": 64, "n_layers": 2, "n_heads": 2, "ffn_hidden": 128}\n' > "$OUT/tiny_shapes.json"
    shapes_small=$OUT/tiny_shapes.json
    shapes_big=$OUT/tiny_shapes.json
fi

sweep() {  # NAME LEVELS REQUESTS ARGS...: one sweep, its report in $OUT/concurrency_NAME.json
    local name=$1 levels=$2 requests=$3; shift 3
    local plot=()
    [ "$PLOT" = 1 ] && plot=(--plot "$OUT/concurrency_$name.png")
    echo "== $name: levels $levels, $requests requests per level at least, $*"
    timeout "$PART_S" $PY -m lab.concurrency.sweep --device "$DEVICE" --concurrency "$levels" --requests "$requests" \
        --out "$OUT/concurrency_$name.json" "${plot[@]}" "$@" 2> "$OUT/concurrency_$name.log"
    local status=$?
    [ -f "$OUT/concurrency_$name.json" ] || { tail -12 "$OUT/concurrency_$name.log"; echo "$name: no report (exit $status)"; }
}

sweep embedded "$LEVELS" "$REQUESTS"
sweep open-dcoder-0.5b "$LEVELS" "$BIG_REQUESTS" --shapes "$shapes_small" --dtype bfloat16 --set constrained=false --set max_tokens=32
sweep dream-7b "$BIG_LEVELS" "$BIG_REQUESTS" --shapes "$shapes_big" --dtype bfloat16 --set constrained=false --set max_tokens=32
ls -la "$OUT"
