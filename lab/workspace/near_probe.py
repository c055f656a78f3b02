"""Can the shipped model edit a retrieved line into the one that fits, or read it from context?

    python -m lab.workspace.near_probe --set tune --n 100            # the table (~10 min on 2 busy cores)
    python -m lab.workspace.near_probe --set tune --n 100 --json     # ... and one JSON object last
    python -m lab.workspace.near_probe --split-only                  # held / near / far only (no model)
    # --dump F: one JSONL row per probed line; --thresholds 0.9,0.5,0.2; --no-edit / --no-context;
    # --constrained: the edit passes vetoed by the syntax check as in the engine; --model DIR

A probe, before any training, of two ways to use the workspace's lines that are *near* the
line a user writes but not the same (the engine's drafts only ever help with lines the
workspace already holds, docs/workspace.md "Where the right answers come from").

**The lines.** The real lines of lab/workspace/lines.py (`items(names, n, into)`: the
cursor after the line's indentation, the package with every sampled line blanked as the
workspace; the request's prefix and suffix come from that blanked copy). Each line is
classified by the closest *other* line of what the workspace index holds
(`WorkspaceIndex.files()` of the blanked copy, as lab/workspace/novelty.py counts "held"):
normalized Levenshtein similarity of the stripped lines, 1 - distance / longer length
(`similarity`, exact, no library): **held** (the same line stands elsewhere), **near**
(another line at similarity >= 0.8), **far** (none). The nearest line is the one of
highest similarity (ties: the commonest, then the first in path order).

**Edit probe** (near lines, held lines as the control). For each line the request's context
is encoded as engine/job.py does it (token healing at the cursor: the prefix cut before the
indentation, `Engine.context_ids`, `model.encode_context`), and a sampler `Denoising` is
started from a canvas that already holds a line: the indentation + the nearest line's
tokens, then end-of-middle tokens up to a whole block (the canvas a closed middle has).
The sampler runs as it does in the engine (`Denoising.canvas_ids` / `advance`, the copy rule
on) with `max_edit_passes` 3, `allow_end` off (the start's length stays) and each
`edit_threshold` of `--thresholds` (0.9 is the shipped default): the only way the canvas
changes is rule 4's token-to-token rewrite of a position the model is that sure of
(engine/sampler.py `edit`; the shipped sampler has no insertion or deletion, so a near line
whose tokens are not as many as the true line's cannot become it). Unconstrained unless
`--constrained`. Per start it reports: exact (the answer's first line, stripped, is the
true line), changed (the answer is not the start), worse / better (similarity to the true
line fell / rose). Three starts:

- `near`: the nearest line's tokens, its own length;
- `oracle`: the TRUE line's token count, the near line's tokens cut to it or followed by
  masks (the positions the model must insert, committed by the usual rules), the
  `Example.noisy_canvas` of docs/next-edit.md;
- `masks`: the true line's token count, all masked (the model alone, given the length).

- `edit` (`--edit-only` runs only this one): the engine's edit candidate as it runs
  (engine/near_edit.py, `Prober.run_edit`): the indentation + the nearest line + its
  newline, then masks to `edit_canvas_length` (the canvas lab/training/near_lines.py
  trains on), one line, edits at each threshold, the forwards the engine allows it; its
  row also keeps `logp`, the model's mean log-probability of the answer in its last pass
  (what `near_edit.keeps` reads).

It also reads the first pass over the `near` canvas where the near line has exactly as many
tokens as the true line (substitutions only): at the positions that differ, how often the
model's best token is the true one and its mean probability; at those that agree, how often
its best token keeps them.

**Context probe** (the same lines). `Engine.infill` with no workspace (no drafts, no
workspace copy table), the cross-file text laid out by engine/context_window.py (before
the prefix, at most `cross_file_share` of the prefix window): the line the workspace holds
(the true line for held lines, the nearest for near lines) as
- `none`: no cross-file text (the file alone);
- `comment`: `# Context from FILE:` / `# LINE`, the language server's format
  (infill_lsp/cross_file.py);
- `snippet`: the line between its previous and next non-blank lines, as raw code, where
  it stands (engine/workspace/snippets.py `snippet_block`: the layout of the
  `draft_context` knob and of the training recipe lab/training/context_snippets.py);
and reports exact, and for near lines how often the answer is the near line verbatim.
Beside it, the model alone teacher-forced (`forced`: no copy rule, no syntax check): the
true line revealed left to right on a masked canvas of its length, the mean log-probability
of each next true token and whether the model's best token is the true one at every step,
for each context and for `above` (the line as a comment right above the cursor's line).

Tuning packages only: `--set aside` exists for one final report and nothing is tuned here.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from engine.workspace.snippets import snippet_block
from lab.training.near_lines import distance
from lab.workspace.lines import ASIDE, TUNE, Item, items

SETS = {"tune": TUNE, "aside": ASIDE}
NEAR = 0.8  # similarity at or above which another line is "near"
MARKER = {"python": "#", "javascript": "//"}


# ---------------------------------------------------------------- similarity
def similarity(a: str, b: str) -> float:
    """Normalized Levenshtein similarity: 1 - distance / the longer length (1.0 for two empty strings)."""
    longest = max(len(a), len(b))
    return 1.0 if not longest else 1.0 - distance(a, b) / longest


@dataclass
class Place:
    path: str  # relative to the workspace
    line: int  # 0-based
    previous: str  # the previous non-blank line, as written
    text: str  # the line as written
    next: str  # the next non-blank line, as written


@dataclass
class Pool:
    """The stripped non-blank lines a workspace holds: counts, first place, characters."""

    counts: Counter = field(default_factory=Counter)
    places: dict[str, Place] = field(default_factory=dict)
    chars: dict[str, Counter] = field(default_factory=dict)
    by_length: dict[int, list[str]] = field(default_factory=lambda: defaultdict(list))

    def add_file(self, path: Path, relative: str) -> None:
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
        except OSError:
            return
        filled = [i for i, line in enumerate(lines) if line.strip()]
        for k, i in enumerate(filled):
            stripped = lines[i].strip()
            self.counts[stripped] += 1
            if stripped not in self.places:
                self.places[stripped] = Place(relative, i, lines[filled[k - 1]] if k else "", lines[i], lines[filled[k + 1]] if k + 1 < len(filled) else "")
                self.chars[stripped] = Counter(stripped)
                self.by_length[len(stripped)].append(stripped)

    def nearest(self, line: str) -> tuple[float, str]:
        """(similarity, line) of the closest line held, if at or above NEAR; (1.0, line)
        when held; (0.0, "") when none is near."""
        if self.counts[line]:
            return 1.0, line
        best: tuple[float, int, str] = (NEAR - 1e-9, 0, "")
        mine = Counter(line)
        n = len(line)
        low, high = math.ceil(n * NEAR - 1e-9), math.floor(n / NEAR + 1e-9)
        for length in range(low, high + 1):
            for other in self.by_length.get(length, ()):
                longest = max(n, length)
                bound = math.floor(longest * (1 - best[0]) + 1e-9)  # the most edits that could still beat the best
                theirs = self.chars[other]
                if max(sum((mine - theirs).values()), sum((theirs - mine).values())) > bound:
                    continue
                d = distance(line, other, bound)
                if d > bound:
                    continue
                sim = 1.0 - d / longest
                key = (sim, self.counts[other])
                if key > best[:2]:
                    best = (sim, self.counts[other], other)
        return (best[0], best[2]) if best[2] else (0.0, "")


@dataclass
class Line:
    item: Item
    kind: str  # held | near | far
    sim: float
    nearest: str  # the nearest other line, stripped ("" for far)
    place: Optional[Place]


def classify(names: list[str], n: int, tmp: Path) -> list[Line]:
    return classify_items(items(names, n, tmp / "workspaces"), tmp / "cache")


def classify_items(found: list[Item], cache_dir: Path) -> list[Line]:
    """Each item as held, near or far by the closest other line its workspace copy's index
    holds (the split of this module's docstring)."""
    from engine.workspace import WorkspaceIndex

    out = []
    pools: dict[str, Pool] = {}
    for item in found:
        if item.workspace not in pools:
            index = WorkspaceIndex(item.workspace, cache_dir=cache_dir)
            try:
                index.refresh()
                pool = Pool()
                for path, _ in index.files():
                    pool.add_file(path, str(path.relative_to(index.root)))
            finally:
                index.close()
            pools[item.workspace] = pool
        pool = pools[item.workspace]
        sim, other = pool.nearest(item.reference.strip())
        kind = "held" if sim == 1.0 else "near" if other else "far"
        out.append(Line(item, kind, sim, other, pool.places.get(other) if other else None))
    return out


# ---------------------------------------------------------------- edit probe
def first_line(text: str) -> str:
    return text.split("\n")[0].strip() if text.strip() else ""


class Prober:
    """One shipped engine, driven from here: contexts encoded as engine/job.py does, sampler
    runs over canvases that start from given tokens."""

    def __init__(self, model: Optional[str], constrained: bool) -> None:
        import engine

        self.engine = engine.load(model)
        self.tok = self.engine.tokenizer
        self.constrained = constrained

    def context(self, item: Item):
        from engine.healing import Healing
        from engine.job import COPY_SUFFIX_CHARS
        from engine.sampler import Surroundings

        eng, tok = self.engine, self.tok
        cfg = eng.settings
        kept, healing = Healing.at_cursor(item.prefix, tok, whitespace=cfg.heal_cursor, word=cfg.heal_word)
        prefix_ids, suffix_ids = eng.context_ids(kept, item.suffix, "", cfg)
        context = eng.model.encode_context(prefix_ids, suffix_ids)
        checks = None
        if self.constrained:
            from engine.api import constraint_for

            constraint = constraint_for(item.language)
            checks = healing.judging(constraint) if constraint is not None else None
        copy_suffix = tuple(tok.encode(item.suffix[:COPY_SUFFIX_CHARS])) if item.suffix else ()
        around = Surroundings(kept, item.suffix, checks, eng.copy_source(kept, prefix_ids, cfg), copy_suffix, None, healing.first_text)
        return context, healing, around

    def run(self, context, healing, around, start: list[int], threshold: float) -> tuple[str, int, "object"]:
        """(the answer from the user's cursor, edits applied, the first pass's logits) of a
        sampler run whose canvas starts as `start` (mask ids allowed) + end-of-middle tokens
        up to a whole block."""
        import torch

        from engine.sampler import CanvasState, Denoising

        tok = self.tok
        cfg = self.engine.settings.replace(max_edit_passes=3, edit_threshold=threshold, allow_end=False, constrained=self.constrained)
        run = Denoising.begin(tok, cfg, around, time.perf_counter(), forwards=1)
        block = cfg.block_size
        run.canvas = CanvasState(0, tok)
        run.canvas.ids = list(start) + [tok.eom_id] * (block * math.ceil((len(start) + 1) / block) - len(start))
        first = None
        with torch.inference_mode():
            while (ids := run.canvas_ids()) is not None:
                logits = self.engine.model.canvas_logits(context, torch.tensor([ids], dtype=torch.long))[0]
                if first is None:
                    first = logits.float().clone()
                run.advance(logits)
        result = run.finish().result
        return healing.user_middle(result.middle), result.edits, first


    def run_edit(self, context, healing, around, start: list[int], threshold: float) -> tuple[str, int, Optional[float]]:
        """(the answer from the user's cursor, edits applied, `near_edit.line_logp` of the
        last pass) of the engine's edit candidate (engine/near_edit.py) over `start` (the
        indentation + a line + its newline): masks to `edit_canvas_length`, one line, edits
        at `threshold`, the forwards the engine allows it after its first pass."""
        import torch

        from engine import near_edit
        from engine.sampler import CanvasState, Denoising, Modes

        tok = self.tok
        cfg = near_edit.editing_settings(self.engine.settings).replace(edit_threshold=threshold, constrained=self.constrained)
        run = Denoising.begin(tok, cfg, around, time.perf_counter(), forwards=1, modes=Modes(end_at_line_end=True))
        run.canvas = CanvasState(near_edit.edit_canvas_length(len(start), cfg.block_size), tok)
        for position, token in enumerate(start):
            run.canvas.commit(position, token)
        last = None
        with torch.inference_mode():
            while run.forwards < near_edit.MAX_FORWARDS and (ids := run.canvas_ids()) is not None:
                last = self.engine.model.canvas_logits(context, torch.tensor([ids], dtype=torch.long))[0].float()
                run.advance(last)
        logp = near_edit.line_logp(tok, run.canvas.ids, last)
        middle = run.finish().result.middle
        return healing.user_middle(middle[:-1] if middle.endswith("\n") else middle), run.edits, logp


def edit_probe(prober: Prober, line: Line, thresholds: list[float], edit_only: bool = False) -> dict:
    """The starts (`edit`, and unless `edit_only` `near`, `oracle`, `masks`) at each threshold for one line."""
    import torch

    tok = prober.tok
    item = line.item
    context, healing, around = prober.context(item)
    lead = healing.removed if not healing.word else ""
    near_ids = tok.encode(lead + line.nearest)
    true_ids = tok.encode(lead + item.reference.strip())
    reference = item.reference.strip()
    starts = {} if edit_only else {"near": near_ids}
    if line.kind == "near" and not edit_only:
        L = len(true_ids)
        starts["oracle"] = near_ids[:L] + [tok.mask_id] * max(0, L - len(near_ids))
        starts["masks"] = [tok.mask_id] * L
    row: dict = {"id": item.id, "kind": line.kind, "sim": round(line.sim, 4), "reference": reference, "nearest": line.nearest,
                 "near_tokens": len(near_ids), "true_tokens": len(true_ids), "runs": {}}
    start_sim = similarity(line.nearest, reference)
    edit_start = tok.encode(lead + line.nearest + "\n")
    for threshold in thresholds:
        answer, edits, logp = prober.run_edit(context, healing, around, edit_start, threshold)
        got = first_line(answer)
        sim_after = similarity(got, reference)
        row["runs"][f"edit@{threshold}"] = {"answer": got, "edits": edits, "exact": got == reference, "changed": got != line.nearest,
                                            "worse": sim_after < start_sim - 1e-9, "better": sim_after > start_sim + 1e-9, "sim": round(sim_after, 4),
                                            "logp": None if logp is None else round(logp, 4)}
        for name, start in starts.items():
            answer, edits, first = prober.run(context, healing, around, start, threshold)
            got = first_line(answer)
            was = line.nearest if name != "masks" else ""
            sim_after = similarity(got, reference)
            base = start_sim if name != "masks" else 0.0
            row["runs"][f"{name}@{threshold}"] = {"answer": got, "edits": edits, "exact": got == reference, "changed": got != was,
                                                  "worse": sim_after < base - 1e-9, "better": sim_after > base + 1e-9, "sim": round(sim_after, 4)}
            if name == "near" and threshold == thresholds[0] and first is not None and len(near_ids) == len(true_ids):
                probs = torch.softmax(first[: len(near_ids)], dim=-1)
                best = probs.argmax(dim=-1).tolist()
                diff = [p for p in range(len(near_ids)) if near_ids[p] != true_ids[p]]
                same = [p for p in range(len(near_ids)) if near_ids[p] == true_ids[p]]
                row["first_pass"] = {"differ": len(diff), "differ_best_true": sum(best[p] == true_ids[p] for p in diff),
                                     "differ_p_true": [round(float(probs[p, true_ids[p]]), 4) for p in diff],
                                     "differ_p_best": [round(float(probs[p].max()), 4) for p in diff],
                                     "agree": len(same), "agree_kept": sum(best[p] == near_ids[p] for p in same)}
    return row


# ---------------------------------------------------------------- context probe
def cross_texts(line: Line) -> dict[str, str]:
    marker = MARKER.get(line.item.language, "#")
    place = line.place
    shown = line.item.reference.strip() if line.kind == "held" else line.nearest
    name = Path(place.path).name if place else "other"
    texts = {"none": "", "comment": f"{marker} Context from {name}:\n{marker} {shown}\n"}
    if place is not None:
        texts["snippet"] = snippet_block([[t for t in (place.previous, place.text, place.next) if t]])  # the draft_context layout
    return texts


def forced(prober: Prober, item: Item, cross: str, above: str = "") -> tuple[float, bool]:
    """The model alone (no copy rule, no syntax check), teacher-forced left to right: the
    true line's tokens (after the healed indentation) revealed one at a time on a masked
    canvas of the true length, each pass reading the next position. (mean log-probability of
    the true token, whether the model's best token is the true one at every position).
    `above`: a line inserted right above the cursor's line (the ceiling of nearness)."""
    import torch

    from engine.healing import Healing

    eng, tok = prober.engine, prober.tok
    cfg = eng.settings
    kept, healing = Healing.at_cursor(item.prefix, tok, whitespace=cfg.heal_cursor, word=cfg.heal_word)
    lead = healing.removed if not healing.word else ""
    if above:
        kept = kept + lead + above + "\n"
    prefix_ids, suffix_ids = eng.context_ids(kept, item.suffix, cross, cfg)
    truth = tok.encode(lead + item.reference.strip())
    L, block = len(truth), cfg.block_size
    pad = [tok.eom_id] * (block * math.ceil((L + 1) / block) - L)
    with torch.inference_mode():
        context = eng.model.encode_context(prefix_ids, suffix_ids)
        rows = torch.tensor([truth[:k] + [tok.mask_id] * (L - k) + pad for k in range(L)], dtype=torch.long)
        logp = torch.log_softmax(eng.model.canvas_logits(context, rows).float(), dim=-1)
    picked = [float(logp[k, k, truth[k]]) for k in range(L)]
    right = all(int(logp[k, k].argmax()) == truth[k] for k in range(L))
    return sum(picked) / L, right


def context_probe(prober: Prober, line: Line) -> dict:
    item = line.item
    reference = item.reference.strip()
    row: dict = {"id": item.id, "kind": line.kind, "reference": reference, "nearest": line.nearest, "runs": {}}
    texts = cross_texts(line)
    for name, cross in texts.items():
        result = prober.engine.infill(item.prefix, item.suffix, item.language, cross_file=cross, workspace_drafts=False)
        got = first_line(result.middle)
        logp, right = forced(prober, item, cross)
        row["runs"][name] = {"answer": got, "exact": got == reference, "copied_near": line.kind == "near" and got == line.nearest,
                             "empty": not got, "forced_logp": round(logp, 4), "forced_right": right}
    shown = reference if line.kind == "held" else line.nearest
    logp, right = forced(prober, item, "", f"{MARKER.get(item.language, '#')} {shown}")
    row["runs"]["above"] = {"forced_logp": round(logp, 4), "forced_right": right}
    return row


# ---------------------------------------------------------------- report
def pct(a: int, b: int) -> str:
    return f"{a} / {b} ({100 * a / b:.0f}%)" if b else "0 / 0"


def summarize(lines: list[Line], edits: list[dict], contexts: list[dict], thresholds: list[float]) -> dict:
    split = Counter(line.kind for line in lines)
    per_package = {}
    for line in lines:
        per_package.setdefault(line.item.package, Counter())[line.kind] += 1
    out: dict = {"lines": len(lines), "split": dict(split), "per_package": {k: dict(v) for k, v in per_package.items()}}
    if edits:
        table = {}
        for kind in ("held", "near"):
            rows = [r for r in edits if r["kind"] == kind]
            if not rows:
                continue
            table[kind] = {"n": len(rows), "same_token_count": sum(r["near_tokens"] == r["true_tokens"] for r in rows)}
            for key in rows[0]["runs"]:
                runs = [r["runs"][key] for r in rows]
                table[kind][key] = {m: sum(x[m] for x in runs) for m in ("exact", "changed", "worse", "better")}
            fp = [r["first_pass"] for r in rows if "first_pass" in r]
            if fp:
                differ = sum(f["differ"] for f in fp)
                p_true = [p for f in fp for p in f["differ_p_true"]]
                p_best = [p for f in fp for p in f["differ_p_best"]]
                table[kind]["first_pass"] = {"lines": len(fp), "differ": differ, "differ_best_true": sum(f["differ_best_true"] for f in fp),
                                             "differ_mean_p_true": round(sum(p_true) / len(p_true), 4) if p_true else None,
                                             "differ_best_ge_0.9": sum(p >= 0.9 for p in p_best), "differ_best_ge_0.5": sum(p >= 0.5 for p in p_best),
                                             "agree": sum(f["agree"] for f in fp), "agree_kept": sum(f["agree_kept"] for f in fp)}
        out["edit"] = table
    if contexts:
        table = {}
        for kind in ("held", "near"):
            rows = [r for r in contexts if r["kind"] == kind]
            if not rows:
                continue
            table[kind] = {"n": len(rows)}
            for key in rows[0]["runs"]:
                runs = [r["runs"][key] for r in rows if key in r["runs"]]
                table[kind][key] = {"n": len(runs), **{m: sum(x[m] for x in runs) for m in ("exact", "copied_near", "empty", "forced_right") if m in runs[0]},
                                    "forced_mean_logp": round(sum(x["forced_logp"] for x in runs) / len(runs), 4)}
        out["context"] = table
    return out


def render(summary: dict, thresholds: list[float]) -> str:
    s = summary["split"]
    n = summary["lines"]
    out = [f"lines: {n}; held {pct(s.get('held', 0), n)}, near {pct(s.get('near', 0), n)}, far {pct(s.get('far', 0), n)}"]
    for name, c in summary["per_package"].items():
        out.append(f"  {name:<12} held {c.get('held', 0):>3}  near {c.get('near', 0):>3}  far {c.get('far', 0):>3}")
    for kind, t in summary.get("edit", {}).items():
        out.append(f"\nedit probe, {kind} lines (n={t['n']}; nearest line with the true line's token count: {t['same_token_count']})")
        out.append(f"  {'start@threshold':<16} {'exact':>14} {'changed':>14} {'worse':>14} {'better':>14}")
        for key, v in t.items():
            if "@" in key:
                out.append(f"  {key:<16} " + " ".join(f"{pct(v[m], t['n']):>14}" for m in ("exact", "changed", "worse", "better")))
        fp = t.get("first_pass")
        if fp:
            out.append(f"  first pass over the {fp['lines']} same-length starts: {fp['differ']} differing tokens, the model's best is the true one at "
                       f"{fp['differ_best_true']} (mean p(true) {fp['differ_mean_p_true']}; best >= 0.9 at {fp['differ_best_ge_0.9']}, >= 0.5 at {fp['differ_best_ge_0.5']}); "
                       f"{fp['agree']} agreeing tokens, kept as best at {fp['agree_kept']}")
    for kind, t in summary.get("context", {}).items():
        out.append(f"\ncontext probe, {kind} lines (n={t['n']})")
        for key, v in t.items():
            if isinstance(v, dict):
                forced_figures = f"teacher-forced: every token the model's best {pct(v['forced_right'], v['n'])}, mean log p(true token) {v['forced_mean_logp']}"
                if "exact" not in v:
                    out.append(f"  {key:<8} (as a comment right above the cursor's line) {forced_figures}")
                    continue
                extra = f", near line verbatim {v['copied_near']}" if kind == "near" else ""
                out.append(f"  {key:<8} exact {pct(v['exact'], v['n'])}, empty {v['empty']}{extra}; {forced_figures}")
    return "\n".join(out)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.workspace.near_probe", description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=tuple(SETS), default="tune", help="tune (default); aside only for one final report")
    parser.add_argument("--n", type=int, default=100, help="lines per package")
    parser.add_argument("--thresholds", default="0.9,0.5,0.2", help="edit thresholds tried (the first is the one the first-pass figures use)")
    parser.add_argument("--model", default=None, help="model directory (default: the embedded model)")
    parser.add_argument("--constrained", action="store_true", help="edit passes vetoed by the syntax check (as in the engine)")
    parser.add_argument("--split-only", action="store_true", help="only classify the lines (no model)")
    parser.add_argument("--no-edit", action="store_true")
    parser.add_argument("--no-context", action="store_true")
    parser.add_argument("--edit-only", action="store_true", help="of the edit probe, only the engine's edit candidate (`edit@T`: engine/near_edit.py)")
    parser.add_argument("--dump", type=Path, help="JSONL: one row per line probed")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object last")
    args = parser.parse_args(argv)
    thresholds = [float(t) for t in args.thresholds.split(",") if t.strip()]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        lines = classify(list(SETS[args.set]), args.n, Path(tmp))
        print(f"classified {len(lines)} lines in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        edits: list[dict] = []
        contexts: list[dict] = []
        if not args.split_only:
            prober = Prober(args.model, args.constrained)
            probed = [line for line in lines if line.kind in ("held", "near")]
            for i, line in enumerate(probed):
                if not args.no_edit:
                    edits.append(edit_probe(prober, line, thresholds, args.edit_only))
                if not args.no_context:
                    contexts.append(context_probe(prober, line))
                if (i + 1) % 25 == 0:
                    print(f"  {i + 1} / {len(probed)} lines probed, {time.perf_counter() - started:.0f} s", file=sys.stderr)
        if args.dump:
            with args.dump.open("w") as f:
                by_id = {r["id"]: r for r in contexts}
                for line in lines:
                    row = {"id": line.item.id, "kind": line.kind, "sim": round(line.sim, 4), "reference": line.item.reference.strip(), "nearest": line.nearest}
                    row.update({k: v for r in edits if r["id"] == line.item.id for k, v in r.items() if k not in row})
                    if line.item.id in by_id:
                        row["context"] = by_id[line.item.id]["runs"]
                    f.write(json.dumps(row) + "\n")
    summary = summarize(lines, edits, contexts, thresholds)
    summary.update({"set": args.set, "n": args.n, "thresholds": thresholds, "constrained": args.constrained, "seconds": round(time.perf_counter() - started, 1)})
    print(render(summary, thresholds))
    if args.json:
        print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
