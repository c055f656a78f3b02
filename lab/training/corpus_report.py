"""Markdown tables of a built corpus (the figures section of docs/corpus.md).

    python -m lab.training.corpus_report --corpus data/corpus > figures.md

Everything comes from the corpus's summary.json (written by `python -m lab corpus`).
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path


def _kind(source: str) -> str:
    if source.startswith("stdlib"):
        return "CPython standard library"
    return {"pypi": "PyPI wheels", "npm": "npm tarballs", "deb": "Debian packages"}[source.split(":", 1)[0]]


def render(summary: dict) -> str:
    bpt = summary.get("tokenizer", {}).get("bytes_per_token", {})
    out = [
        f"**{summary['train']:,} training files, {summary['valid']:,} validation files, {summary['bytes'] / 1e6:.1f} MB** of source text "
        f"after filtering; {summary['duplicates']:,} exact duplicates and {summary['near_duplicates']:,} near-duplicates "
        f"({summary['near_duplicate_bytes'] / 1e6:.1f} MB) dropped; {summary.get('reserved_skipped', 0)} files skipped as copies of reserved packages.",
        "",
        "| language | train files | validation files | MB | mean weight | share of sampled examples (without weights) | bytes per token |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for lang, v in summary["languages"].items():
        out.append(f"| {lang} | {v['train']:,} | {v['valid']:,} | {v['mb']:.1f} | {v['mean_weight']:.2f} | {v['sampling_share']:.1%} ({v['share_without_weights']:.1%}) | {bpt.get(lang, float('nan')):.2f} |")
    out += ["", "Bytes per token: the shipped tokenizer (engine/default_model/tokenizer.json, 8,192 entries) on up to 2 MB of each language's training files.", ""]
    groups: dict[str, list[tuple[str, dict]]] = defaultdict(list)
    for source, v in summary["sources"].items():
        groups[_kind(source)].append((source, v))
    out += ["| sources | count | train files | validation files | MB | near-duplicates dropped |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for kind, rows in groups.items():
        out.append(f"| {kind} | {len(rows)} | {sum(v['train'] for _, v in rows):,} | {sum(v['valid'] for _, v in rows):,} | {sum(v['mb'] for _, v in rows):.1f} | {sum(v['near_duplicates'] for _, v in rows):,} |")
    out += ["", "Per source (languages, files, MB, exact and near-duplicates dropped, the licence the package itself declares):", "",
            "| source | languages | train | valid | MB | exact dup. | near dup. | declared licence |", "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for source, v in summary["sources"].items():
        out.append(f"| {source} | {', '.join(v['languages'])} | {v['train']:,} | {v['valid']:,} | {v['mb']:.2f} | {v['duplicates']:,} | {v['near_duplicates']:,} | {v.get('declared_license', '')} |")
    out += ["", f"Near-duplicate examples (dropped -> kept, estimated Jaccard; {summary['near_duplicate_rule']}):", ""]
    out += [f"- `{e['dropped']}` -> `{e['kept']}` ({e['similarity']:.2f})" for e in summary["near_duplicate_examples"]]
    if summary.get("license_warnings"):
        out += ["", "Packages whose own licence metadata names a copyleft licence (checked by hand, see above): " + ", ".join(summary["license_warnings"])]
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.training.corpus_report", description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path("data/corpus"))
    args = parser.parse_args(argv)
    print(render(json.loads((args.corpus / "summary.json").read_text())), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
