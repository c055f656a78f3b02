#!/usr/bin/env bash
# A prepared training run for a lent GPU: train for BUDGET seconds, then bring back the
# result in bf16. By default a new model of the shape chosen from the CPU learning curves
# (docs/training.md; D_MODEL/LAYERS/HEADS) from scratch; INIT=engine/default_model
# continues the shipped model instead.
#
#   here, once:   python scripts/gpu_pack.py --corpus data/corpus_v2   # gpu_pack/corpus.tar.xz (<= 40 MiB, git-ignored)
#   device call:  run(command="bash scripts/gpu_train.sh 420", carry=["gpu_pack"], timeout_s=560)
#   back here:    <files_at>/model is a model directory (the run's weights, or their
#                 checkpoint average when that scored better). Measure and publish it:
#                 cp -r <files_at>/model runs/gpu-model && python -m lab.training.publish runs/gpu-model
#                 && bash scripts/release_model.sh   (or continue on the CPU with
#                 python -m lab train --run runs/next --init-from runs/gpu-model ...)
#
# What comes back ($OUT, at most 8 files): model/{model.safetensors,config.json,tokenizer.json},
# train.log, log.jsonl, average.txt, gpu.txt. The device image has torch, tokenizers and
# safetensors, which is all training needs (no tree-sitter: evaluation runs back here).
set -uo pipefail
BUDGET=${1:-420}
BATCH=${BATCH:-256}
LR=${LR:-1.2e-3}
INIT=${INIT:-}            # a model directory to continue; empty: a new model of this shape
D_MODEL=${D_MODEL:-384}
LAYERS=${LAYERS:-8}
HEADS=${HEADS:-3}
WORKERS=${WORKERS:-12}
NEAR=${NEAR:-0}          # share of near-line edit examples (docs/training.md, "Learning to edit a near line")
CONTEXT=${CONTEXT:-0}    # share of examples reading retrieved snippets (docs/training.md, "Learning to read retrieved code")
DEVICE=${DEVICE:-cuda}   # DEVICE=cpu BATCH=8 WORKERS=1 bash scripts/gpu_train.sh 20: a dry run here
OUT=${OUT:-/tmp/infill_gpu_out}
WORK=/tmp/infill_gpu
PY=${PYTHON:-python3}
mkdir -p "$OUT" "$WORK"
export PYTHONUNBUFFERED=1

{ command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.used,memory.total,clocks.sm --format=csv; } > "$OUT/gpu.txt"; cat "$OUT/gpu.txt"
$PY -c "import torch, tokenizers, safetensors; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), 'tokenizers', tokenizers.__version__)" | tee -a "$OUT/gpu.txt" || exit 3
tar -xJf gpu_pack/corpus.tar.xz -C "$WORK" || { echo "no gpu_pack/corpus.tar.xz: run scripts/gpu_pack.py here and carry gpu_pack"; exit 2; }

# Warm up, then a cosine over the budget (a fresh optimizer either way).
if [ -n "$INIT" ]; then start=(--init-from "$INIT"); else start=(--d-model "$D_MODEL" --layers "$LAYERS" --heads "$HEADS"); fi
$PY -m lab.training.train --run "$WORK/run" --corpus "$WORK/corpus" \
    "${start[@]}" --tokenizer engine/default_model/tokenizer.json --clock wall \
    --device "$DEVICE" --batch-size "$BATCH" --lr "$LR" --warmup 0.05 --time-budget "$BUDGET" \
    --data-workers "$WORKERS" --checkpoint-minutes 1.5 --snapshots 4 --eval-every 250 --log-every 100 \
    --edit-fraction 0.1 --near-fraction "$NEAR" --context-fraction "$CONTEXT" > "$OUT/train.log" 2>&1
status=$?
grep -E "^train:|^validation" "$OUT/train.log" | tail -25
tail -3 "$OUT/train.log"
[ -f "$WORK/run/model/config.json" ] || { echo "training wrote no model (exit $status)"; exit 1; }
$PY -m lab.training.average --run "$WORK/run" --corpus "$WORK/corpus" --write > "$OUT/average.txt" 2>&1; tail -4 "$OUT/average.txt"
$PY -m lab.training.publish "$WORK/run/model" --out "$OUT/model"
cp "$WORK/run/log.jsonl" "$OUT/"
exit $status
