"""Check a built corpus against the single-line benchmarks cut from it.

    python -m lab.training.bench_overlap --corpus data/corpus

The dev set and the held-out benchmark (lab/bench_data/*.jsonl) are cut from validation
files of the corpus. After any change of sources this checks that
1. every item's file is still in the validation split (same source and path), and
2. no training file contains the item verbatim: the item's middle line together with
   the six non-blank lines before it and the three after it (indentation and blank
   lines ignored) appears in no training file. A hit means a training file copies the
   benchmark's code (a vendored or re-published copy of the same module); shorter
   windows mostly find shared boilerplate (licence headers, rule skeletons).
The corpus the benchmarks were cut from already has such hits (tables of codecs, rule
skeletons and locales that repeat across files of one package); `--baseline OLD_CORPUS`
separates them from hits in sources that OLD_CORPUS did not have. Exit status 1 when an
item's file left the validation split, or a source not in the baseline has a hit.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

BENCH_FILES = [Path(__file__).resolve().parents[1] / "bench_data" / name for name in ("dev_lines.jsonl", "heldout_lines.jsonl")]


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.split("\n") if line.strip()]


BEFORE, AFTER = 6, 3


def item_window(item: dict) -> tuple[str, ...] | None:
    """(BEFORE lines before, the middle, AFTER lines after), non-blank and stripped."""
    before, middle, after = _lines(item["prefix"])[-BEFORE:], _lines(item["middle"]), _lines(item["suffix"])[:AFTER]
    if len(middle) != 1 or len(before) < BEFORE or len(after) < AFTER:
        return None
    return (*before, middle[0], *after)


def training_hits(train_jsonl: Path, items: list[dict]) -> dict[str, list[str]]:
    """{item id: ["source/path" of each training file that contains its window]}."""
    windows: dict[tuple[str, ...], list[str]] = {}
    for item in items:
        window = item_window(item)
        if window is not None:
            windows.setdefault(window, []).append(item["id"])
    middles = {w[BEFORE] for w in windows}
    hits: dict[str, list[str]] = {}
    with open(train_jsonl) as fh:
        for line in fh:
            doc = json.loads(line)
            lines = _lines(doc["text"])
            for i in range(BEFORE, len(lines) - AFTER):
                if lines[i] in middles:
                    for item_id in windows.get(tuple(lines[i - BEFORE : i + AFTER + 1]), ()):
                        hits.setdefault(item_id, []).append(f"{doc['source']}/{doc['path']}")
    return hits


def valid_files(valid_jsonl: Path) -> set[str]:
    with open(valid_jsonl) as fh:
        return {f"{d['source']}/{d['path']}" for d in map(json.loads, fh)}


def _source_of(identity: str) -> str:
    """"npm:@scope/name@1.0/package/x.js" -> "npm:@scope/name@1.0"."""
    parts = identity.split("/")
    return "/".join(parts[:2]) if identity.startswith("npm:@") else parts[0]


def check(corpus: Path, bench_files: list[Path] = BENCH_FILES, baseline: Path | None = None) -> dict:
    items = [json.loads(line) for path in bench_files for line in path.read_text().splitlines() if line.strip()]
    valid = valid_files(corpus / "valid.jsonl")
    missing = sorted({item["source"] for item in items if item["source"] not in valid})
    hits = training_hits(corpus / "train.jsonl", items)
    report = {
        "items": len(items),
        "item_files": len({item["source"] for item in items}),
        "item_files_not_in_validation": missing,
        "items_checked": sum(1 for item in items if item_window(item) is not None),
        "items_found_in_training_files": len(hits),
        "training_sources_with_items": dict(Counter(_source_of(src) for found in hits.values() for src in set(found)).most_common()),
        "training_files_with_items": sorted({src for found in hits.values() for src in found})[:20],
        "hits": hits,
    }
    if baseline is not None:
        with open(baseline / "files.tsv") as fh:
            old = {row.split("\t")[2] for row in fh.read().splitlines()[1:]}
        report["new_sources_with_items"] = sorted(s for s in report["training_sources_with_items"] if s not in old)
    return report


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.training.bench_overlap", description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path("data/corpus"))
    parser.add_argument("--baseline", type=Path, default=None, help="the corpus the benchmarks were cut from (its files.tsv)")
    args = parser.parse_args(argv)
    report = check(args.corpus, baseline=args.baseline)
    print(json.dumps({k: v for k, v in report.items() if k != "hits"}, indent=2))
    return 1 if report["item_files_not_in_validation"] or report.get("new_sources_with_items") else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
