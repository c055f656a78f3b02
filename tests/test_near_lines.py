"""Retrieve-then-edit training examples (lab/training/near_lines.py) and their noising."""
from __future__ import annotations

import random

import pytest
import torch

from engine.near_edit import EDIT_SLACK, edit_canvas_length
from lab.training.data import DataConfig, Example, collate
from lab.training.near_lines import KEEP_WEIGHT, near_line_example, nearest_line

SOURCE = """import os


def load(path):
    with open(path) as handle:
        return handle.read()


def save(path, text):
    with open(path, "w") as handle:
        handle.write(text)


def remove(path):
    os.remove(path)
"""


def test_nearest_line_prefers_the_same_line_then_the_most_alike():
    lines = SOURCE.split("\n")
    first_with = lines.index("    with open(path) as handle:")
    sim, j = nearest_line(lines, first_with)
    assert lines[j] == '    with open(path, "w") as handle:' and 0.5 <= sim < 1.0
    lines.append("    with open(path) as handle:")
    assert nearest_line(lines, first_with) == (1.0, len(lines) - 1)
    # Nothing alike enough: None.
    assert nearest_line(["x = 1", "class Something(Base):"], 0) is None


def test_edit_canvas_length_leaves_room_and_whole_blocks():
    for n in range(1, 60):
        length = edit_canvas_length(n, 16)
        assert length % 16 == 0 and length - n >= EDIT_SLACK


def test_example_starts_from_the_near_line_and_targets_the_true_one(tok):
    cfg = DataConfig()
    rng = random.Random(3)
    seen = made = 0
    for _ in range(40):
        ex = near_line_example(SOURCE, tok, cfg, rng)
        if ex is None:
            continue  # no line of the same token count near the target lines tried
        made += 1
        assert ex.noisy_canvas is not None
        assert len(ex.noisy_canvas) == len(ex.canvas) == edit_canvas_length(len(ex.noisy_canvas) - ex.noisy_canvas.count(tok.mask_id), cfg.block_size)
        # Substitutions only: the start has the true line's token count.
        assert len(ex.noisy_canvas) - ex.noisy_canvas.count(tok.mask_id) == len(ex.canvas) - ex.canvas.count(tok.eom_id)
        target = tok.decode([t for t in ex.canvas if t != tok.eom_id])
        start = tok.decode([t for t in ex.noisy_canvas if t != tok.mask_id])
        assert target.endswith("\n") and start.endswith("\n")
        # Same indentation (the cursor sits after it), the text of another line of the file.
        assert target[: len(target) - len(target.lstrip())] == start[: len(start) - len(start.lstrip())]
        assert start.strip() in [line.strip() for line in SOURCE.split("\n")]
        # The prefix ends where the true line starts (cursor after the indentation, healed).
        prefix = tok.decode(ex.prefix[1:])
        assert SOURCE[: SOURCE.index(target)].endswith(prefix)
        seen += start != target
    assert made >= 10 and seen  # some starts differ from the line they must become


def test_collate_weights_keep_and_edit_positions(tok):
    cfg = DataConfig()
    canvas = tok.encode("    return a\n")
    start = tok.encode("    return b\n")
    n = edit_canvas_length(len(start), cfg.block_size)
    ex = Example([tok.bos_id, *tok.encode("def f(a, b):\n")], canvas + [tok.eom_id] * (n - len(canvas)),
                 [], noisy_canvas=start + [tok.mask_id] * (n - len(start)))
    batch = collate([ex], tok, cfg, random.Random(0), copies=2)
    o = batch.layout.context
    ids, w, masked = batch.ids[0, o : o + n], batch.weights[0, o : o + n], batch.masked[0, o : o + n]
    # Copy 0 is the start exactly as the engine sets it.
    assert ids.tolist() == ex.noisy_canvas
    assert batch.targets[0, o : o + n].tolist() == ex.canvas
    differ = [i for i in range(n) if ex.noisy_canvas[i] != ex.canvas[i]]
    agree = [i for i in range(n) if ex.noisy_canvas[i] == ex.canvas[i]]
    assert differ and agree
    assert all(float(w[i]) == 1.0 for i in differ)
    assert all(float(w[i]) == KEEP_WEIGHT for i in agree)
    assert masked.tolist() == [t == tok.mask_id for t in ex.noisy_canvas]
    # Copy 1 masks part of the start as well; its unmasked tokens are still the start's.
    o1 = o + batch.layout.canvas
    ids1 = batch.ids[0, o1 : o1 + n].tolist()
    assert all(t == tok.mask_id or t == s for t, s in zip(ids1, ex.noisy_canvas))
    assert torch.equal(batch.segments[0, o1 : o1 + n], batch.segments[0, o : o + n] + 1)


def test_near_eval_reads_the_edit_task_off_one_pass(tmp_path, tok):
    """lab/training/near_eval.py: examples from validation files only, every canvas position
    counted once as a wrong start token, a right one kept, or a mask."""
    import json

    import engine
    from lab.training import near_eval

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "valid.jsonl").write_text(json.dumps({"path": "a.py", "language": "python", "text": SOURCE}) + "\n")
    exs = near_eval.examples(corpus, tok, 12, {"python"})
    assert len(exs) == 12
    report = near_eval.measure(engine.DEFAULT_MODEL_DIR, exs, tok)
    starts = sum(sum(s != tok.mask_id for s in ex.noisy_canvas) for ex in exs)
    assert report["differ"] + report["agree"] == starts
    assert report["edit_lines"] + report["same_lines"] == 12
    assert 0.0 <= report["differ_right"] <= 1.0 and 0.0 <= report["agree_kept"] <= 1.0
