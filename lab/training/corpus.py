"""`python -m lab corpus`: build the embedded model's training corpus, reproducibly.

Sources are listed in corpus_sources.toml (the CPython standard library, pinned PyPI and
npm packages, and pinned Debian packages for Go and Rust). Files are filtered (size,
minified bundles, invalid test data, benchmark data, sources reserved for the unseen
benchmark), deduplicated by content hash and then by near-duplicate detection
(lab/training/neardup.py), weighed by their structure (lab/training/structure.py), and
split into train/validation *by file* with a hash of the file's identity so the split is
stable across rebuilds. The output directory gets `train.jsonl`, `valid.jsonl` (one
{"path", "source", "language", "text", "weight"} per line), `files.tsv` (exactly what
went in: split, sha256, source, path) and `summary.json` (counts per source and language,
what was dropped and why). docs/corpus.md describes the rules and the current figures.
"""
from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
import zipfile
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from lab.training import neardup
from lab.training.structure import file_weight

SOURCES_FILE = Path(__file__).with_name("corpus_sources.toml")
MAX_FILE_BYTES = 200_000
MIN_FILE_BYTES = 64
VALID_FRACTION = 0.02
# Nothing from evaluation sets may enter the corpus.
EXCLUDED_MARKERS = ("human_eval", "humaneval", "human-eval", "mbpp", "safim")
LANGUAGE_BY_SUFFIX = {".py": "python", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".ts": "typescript", ".go": "go", ".rs": "rust"}
# Reserved for issue 16's unseen syntax benchmark (lab/syntax_bench/, listed in its
# docs): never in the corpus, in any version. A source with one of these names is an
# error; a file whose path shows a vendored copy of one is skipped.
RESERVED_PACKAGES = frozenset({
    "boltons", "more-itertools", "toolz", "marshmallow", "tomlkit",
    "ws", "qs", "semver", "knex", "rxjs", "immer", "mobx", "@tanstack/query-core",
    "golang-github-spf13-cobra-dev", "golang-github-gorilla-mux-dev", "golang-github-urfave-cli-dev",
    "golang-github-urfave-cli-v2-dev", "golang-github-google-uuid-dev",
    "librust-semver-dev", "librust-smallvec-dev", "librust-itertools-dev", "librust-indexmap-dev",
})
RESERVED_PATH = re.compile(
    r"(?:^|/)(?:boltons|more_itertools|toolz|marshmallow|tomlkit)/"
    r"|node_modules/(?:ws|qs|semver|knex|rxjs|immer|mobx|@tanstack/query-core)/"
    r"|github\.com/(?:spf13/cobra|gorilla/mux|urfave/cli|google/uuid)/"
    r"|cargo/registry/(?:semver|smallvec|itertools|indexmap)-\d"
)
# Licences a source may have (SPDX ids; an expression such as "MIT OR Apache-2.0" needs
# one permissive choice in each AND-term).
PERMISSIVE = frozenset({"MIT", "BSD-2-Clause", "BSD-3-Clause", "Apache-2.0", "ISC", "PSF-2.0", "0BSD", "Zlib", "Unicode-DFS-2016", "BSL-1.0", "CC0-1.0", "Unlicense"})
# Words that, in a package's own licence metadata, need a look by a person (reported in
# summary.json, e.g. a binary wheel that bundles a GPL runtime library next to BSD code).
_COPYLEFT = re.compile(r"\b(?:A|L)?GPL|\bMPL\b|Mozilla Public|\bEUPL|\bSSPL|\bCDDL|Commons Clause|\bBUSL|Business Source")


@dataclass
class CorpusFile:
    source: str  # e.g. "stdlib-3.11.7", "pypi:requests==2.34.2", "deb:librust-syn-dev=1.0.107-1"
    path: str
    language: str
    text: str


@dataclass(frozen=True)
class Selection:
    """A source's optional path rules from corpus_sources.toml: `include` (path
    prefixes; empty means all) and `exclude` (substrings)."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    @classmethod
    def of(cls, entry: dict) -> "Selection":
        return cls(tuple(entry.get("include", ())), tuple(entry.get("exclude", ())))

    def wants(self, path: str) -> bool:
        if self.include and not path.startswith(self.include):
            return False
        return not any(part in path for part in self.exclude)


def license_ok(expression: str) -> bool:
    """Whether an SPDX expression allows permissive use (see PERMISSIVE)."""
    cleaned = expression.replace("(", " ").replace(")", " ").replace(" WITH LLVM-exception", "")
    terms = [t.strip() for t in re.split(r"\s+AND\s+", cleaned) if t.strip()]
    return bool(terms) and all(any(choice.strip() in PERMISSIVE for choice in re.split(r"\s+OR\s+", term)) for term in terms)


def _acceptable(path: str, data: bytes) -> bool:
    lowered = path.lower()
    if any(marker in lowered for marker in EXCLUDED_MARKERS):
        return False
    if not (MIN_FILE_BYTES <= len(data) <= MAX_FILE_BYTES):
        return False
    if lowered.endswith((".min.js", ".d.ts")) or "/dist/" in lowered or "/umd/" in lowered:
        return False
    # Minified or generated: very long lines.
    lines = data.count(b"\n") + 1
    if len(data) / lines > 200:
        return False
    return True


def _decode(data: bytes) -> str | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text.replace("\r\n", "\n")


def stdlib_files() -> Iterator[CorpusFile]:
    root = Path(sysconfig.get_paths()["stdlib"])
    version = ".".join(map(str, sys.version_info[:3]))
    skip_parts = {"site-packages", "__pycache__", "lib2to3", "idlelib"}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if skip_parts & set(path.relative_to(root).parts) or "badsyntax" in rel or "bad_coding" in rel:
            continue
        data = path.read_bytes()
        text = _decode(data)
        if text is not None and _acceptable(rel, data):
            yield CorpusFile(f"stdlib-{version}", rel, "python", text)


def _run(cmd: list[str], cwd: Path) -> None:
    result = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {result.stderr.strip()[-500:]}")


def _cache_dir(cache: Path, kind: str, name: str, version: str) -> Path:
    return (cache / f"{kind}-{name.replace('/', '+')}-{version}").resolve()


def pypi_files(name: str, version: str, cache: Path, selection: Selection = Selection(), licenses: dict | None = None) -> Iterator[CorpusFile]:
    target = _cache_dir(cache, "pypi", name, version)
    if not target.exists() or not any(target.iterdir()):
        target.mkdir(parents=True, exist_ok=True)
        _run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version", "3.12", "-d", str(target), f"{name}=={version}"], cache)
    for archive in sorted(target.glob("*.whl")):
        with zipfile.ZipFile(archive) as zf:
            for info in sorted(zf.infolist(), key=lambda i: i.filename):
                if licenses is not None and info.filename.endswith(".dist-info/METADATA"):
                    licenses[f"pypi:{name}=={version}"] = _wheel_license(zf.read(info).decode("utf-8", "replace"))
                if info.filename.endswith(".py") and ".dist-info/" not in info.filename and selection.wants(info.filename):
                    data = zf.read(info)
                    text = _decode(data)
                    if text is not None and _acceptable(info.filename, data):
                        yield CorpusFile(f"pypi:{name}=={version}", info.filename, "python", text)


def _wheel_license(metadata: str) -> str:
    """The licence a wheel declares: License-Expression, else the licence classifiers,
    else the first line of License."""
    fields = [line.split(":", 1) for line in metadata.split("\n\n", 1)[0].splitlines() if ":" in line]
    expression = [v.strip() for k, v in fields if k == "License-Expression"]
    classifiers = [v.strip().removeprefix("License :: ") for k, v in fields if k == "Classifier" and v.strip().startswith("License ::")]
    plain = [v.strip() for k, v in fields if k == "License" and v.strip()]
    return "; ".join(expression or classifiers or plain[:1]) or "(none declared)"


def npm_files(name: str, version: str, cache: Path, selection: Selection = Selection(), licenses: dict | None = None) -> Iterator[CorpusFile]:
    target = _cache_dir(cache, "npm", name, version) if "/" in name else cache / f"npm-{name}-{version}"
    if not target.exists() or not any(target.glob("*.tgz")):
        target.mkdir(parents=True, exist_ok=True)
        _run(["npm", "pack", "--silent", f"{name}@{version}"], target)
    for archive in sorted(target.glob("*.tgz")):
        with tarfile.open(archive) as tf:
            for member in sorted(tf.getmembers(), key=lambda m: m.name):
                if licenses is not None and member.name == "package/package.json":
                    handle = tf.extractfile(member)
                    declared = json.loads(handle.read()).get("license", "(none declared)") if handle else "(none declared)"
                    licenses[f"npm:{name}@{version}"] = declared if isinstance(declared, str) else json.dumps(declared)
                suffix = Path(member.name).suffix
                if member.isfile() and suffix in LANGUAGE_BY_SUFFIX and selection.wants(member.name):
                    handle = tf.extractfile(member)
                    data = handle.read() if handle else b""
                    text = _decode(data)
                    if text is not None and _acceptable(member.name, data):
                        yield CorpusFile(f"npm:{name}@{version}", member.name, LANGUAGE_BY_SUFFIX[suffix], text)


# Debian keeps package sources here: Go -dev packages under /usr/share/gocode/src, the Go
# toolchain's standard library under /usr/share/go-<version>/src, Rust librust-*-dev
# crates under /usr/share/cargo/registry/<crate>-<version>. testdata/ holds inputs that
# are often deliberately invalid, vendor/ holds copies of other packages.
DEBIAN_SKIP = ("/testdata/", "/vendor/", "/debian/")


def _debian_license(copyright_text: str) -> str:
    """The licence of the `Files: *` stanza of a machine-readable debian/copyright."""
    for stanza in copyright_text.split("\n\n"):
        if re.search(r"^Files:\s*\*\s*$", stanza, re.M):
            found = re.search(r"^License:\s*(.+)$", stanza, re.M)
            if found:
                return found.group(1).strip()
    return "(no Files: * stanza)"


def debian_files(name: str, version: str, cache: Path, selection: Selection = Selection(), licenses: dict | None = None) -> Iterator[CorpusFile]:
    """Go and Rust sources from a pinned Debian package (`apt-get download`, `dpkg-deb -x`)."""
    target = _cache_dir(cache, "deb", name, version)
    root = target / "root"  # the extracted package
    if not root.exists():
        if not any(target.glob("*.deb")):
            target.mkdir(parents=True, exist_ok=True)
            _run(["apt-get", "download", f"{name}={version}"], target)
        archives = sorted(target.glob("*.deb"))
        if not archives:
            raise RuntimeError(f"no .deb for {name}={version} in {target}")
        staging = target / "root.partial"
        staging.mkdir(exist_ok=True)
        for archive in archives:
            _run(["dpkg-deb", "-x", str(archive), str(staging)], target)
        staging.rename(root)
    source = f"deb:{name}={version}"
    if licenses is not None:
        copyright_file = root / "usr/share/doc" / name / "copyright"
        licenses[source] = _debian_license(copyright_file.read_text(errors="replace")) if copyright_file.exists() else "(no copyright file)"
    for path in sorted(p for p in root.rglob("*") if p.suffix in LANGUAGE_BY_SUFFIX and p.is_file() and not p.is_symlink()):
        rel = path.relative_to(root).as_posix()
        if any(part in f"/{rel}" for part in DEBIAN_SKIP) or not selection.wants(rel):
            continue
        data = path.read_bytes()
        text = _decode(data)
        if text is not None and _acceptable(rel, data):
            yield CorpusFile(source, rel, LANGUAGE_BY_SUFFIX[path.suffix], text)


_FETCHERS = {"pypi": pypi_files, "npm": npm_files, "debian": debian_files}


def load_sources(sources_file: Path) -> dict:
    """corpus_sources.toml, checked: every package pinned, permissively licensed, and not
    reserved for the unseen benchmark."""
    sources = tomllib.loads(sources_file.read_text())
    for kind in _FETCHERS:
        for pkg in sources.get(kind, []):
            missing = {"name", "version", "license"} - pkg.keys()
            if missing:
                raise ValueError(f"{sources_file}: {kind} entry {pkg.get('name', '?')} lacks {sorted(missing)}")
            if pkg["name"].lower() in RESERVED_PACKAGES:
                raise ValueError(f"{sources_file}: {pkg['name']} is reserved for the unseen benchmark (issue 16) and may not be in the corpus")
            if not license_ok(pkg["license"]):
                raise ValueError(f"{sources_file}: {pkg['name']} has licence {pkg['license']!r}, not one of the permissive licences {sorted(PERMISSIVE)}")
    return sources


def all_files(sources_file: Path, cache: Path, log=print, licenses: dict | None = None) -> Iterator[CorpusFile]:
    sources = load_sources(sources_file)
    if sources.get("stdlib", {}).get("include", False):
        log("corpus: CPython standard library")
        yield from stdlib_files()
    for kind, fetch in _FETCHERS.items():
        for pkg in sources.get(kind, []):
            log(f"corpus: {kind} {pkg['name']} {pkg['version']}")
            yield from fetch(pkg["name"], pkg["version"], cache, Selection.of(pkg), licenses)


def split_of(source: str, path: str) -> str:
    digest = hashlib.sha256(f"{source}/{path}".encode()).digest()
    return "valid" if int.from_bytes(digest[:4], "big") / 2**32 < VALID_FRACTION else "train"


def _near_duplicates(entries: list[dict], signatures: list, log=print) -> dict[int, tuple[int, float]]:
    """Which entries to drop as near-duplicates: {index: (index of the kept copy, similarity)}.

    Validation files are never dropped (the dev and held-out sets are cut from them);
    they are indexed first, so a training file that nearly copies a validation file is
    dropped (no leak). Training files then go in corpus order: the first copy stays."""
    index = neardup.NearDuplicateIndex()
    dropped: dict[int, tuple[int, float]] = {}
    order = [i for i, e in enumerate(entries) if e["split"] == "valid"] + [i for i, e in enumerate(entries) if e["split"] == "train"]
    for n, i in enumerate(order):
        if entries[i]["split"] == "train":
            hit = index.match(signatures[i])
            if hit is not None:
                dropped[i] = hit
                continue
        index.add(i, signatures[i])
        if n and n % 20000 == 0:
            log(f"corpus: near-duplicate check {n}/{len(order)}")
    return dropped


def build(out_dir: Path, sources_file: Path = SOURCES_FILE, cache: Path | None = None, log=print, tokenizer: Path | None = None) -> dict:
    """Build the corpus into out_dir; returns the summary (also written to summary.json)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    cache = cache or out_dir / "downloads"
    cache.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    licenses: dict[str, str] = {}
    entries: list[dict] = []  # per kept-so-far file: source, path, language, split, sha256, bytes, weight
    signatures: list = []
    exact = Counter()
    reserved = 0
    staging_path = out_dir / "staging.jsonl"
    # Pass 1: read, filter, exact de-duplication, signatures; texts wait in a staging file.
    with open(staging_path, "w") as staging:
        for f in all_files(sources_file, cache, log, licenses):
            if RESERVED_PATH.search(f.path):
                reserved += 1
                continue
            digest = hashlib.sha256(f.text.encode()).hexdigest()
            if digest in seen:
                exact[f.source] += 1
                continue
            seen.add(digest)
            entries.append({"source": f.source, "path": f.path, "language": f.language, "split": split_of(f.source, f.path),
                            "sha256": digest, "bytes": len(f.text.encode()), "weight": file_weight(f.text, f.language)})
            signatures.append(neardup.signature(f.text))
            staging.write(json.dumps(f.text) + "\n")
    log(f"corpus: {len(entries)} distinct files read; near-duplicate check")
    dropped = _near_duplicates(entries, signatures, log)
    # Pass 2: write what stays.
    with open(staging_path) as staging, open(out_dir / "train.jsonl", "w") as train, open(out_dir / "valid.jsonl", "w") as valid, open(out_dir / "files.tsv", "w") as listing:
        listing.write("split\tsha256\tsource\tpath\n")
        for i, (entry, line) in enumerate(zip(entries, staging)):
            if i in dropped:
                continue
            record = {"path": entry["path"], "source": entry["source"], "language": entry["language"], "text": json.loads(line), "weight": entry["weight"]}
            (valid if entry["split"] == "valid" else train).write(json.dumps(record) + "\n")
            listing.write(f"{entry['split']}\t{entry['sha256']}\t{entry['source']}\t{entry['path']}\n")
    staging_path.unlink()
    summary = summarize(entries, dropped, exact, reserved, licenses)
    if tokenizer is not None and tokenizer.exists():
        summary["tokenizer"] = {"file": str(tokenizer), "bytes_per_token": bytes_per_token(out_dir, tokenizer)}
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    log(summary_line(summary))
    return summary


def summarize(entries: list[dict], dropped: dict[int, tuple[int, float]], exact: Counter, reserved: int, licenses: dict[str, str]) -> dict:
    by_source: dict[str, dict] = defaultdict(lambda: {"train": 0, "valid": 0, "bytes": 0, "languages": Counter(), "near_duplicates": 0, "duplicates": 0})
    by_language: dict[str, dict] = defaultdict(lambda: {"train": 0, "valid": 0, "bytes": 0, "weighted": 0.0, "weight_sum": 0.0})
    for i, e in enumerate(entries):
        src = by_source[e["source"]]
        if i in dropped:
            src["near_duplicates"] += 1
            continue
        src[e["split"]] += 1
        src["bytes"] += e["bytes"]
        src["languages"][e["language"]] += e["bytes"]
        lang = by_language[e["language"]]
        lang[e["split"]] += 1
        lang["bytes"] += e["bytes"]
        lang["weight_sum"] += e["weight"]
        if e["split"] == "train":
            lang["weighted"] += e["weight"] * e["bytes"] ** 0.8  # the sampler's mass (lab/training/data.py)
    for source, n in exact.items():
        by_source[source]["duplicates"] += n
    total_mass = sum(v["weighted"] for v in by_language.values()) or 1.0
    unweighted = Counter()
    for i, e in enumerate(entries):
        if i not in dropped and e["split"] == "train":
            unweighted[e["language"]] += e["bytes"] ** 0.8
    unweighted_total = sum(unweighted.values()) or 1.0
    languages = {
        lang: {"train": v["train"], "valid": v["valid"], "mb": round(v["bytes"] / 1e6, 2),
               "mean_weight": round(v["weight_sum"] / max(1, v["train"] + v["valid"]), 3),
               "sampling_share": round(v["weighted"] / total_mass, 4), "share_without_weights": round(unweighted[lang] / unweighted_total, 4)}
        for lang, v in sorted(by_language.items())
    }
    sources = {}
    for source, v in by_source.items():
        declared = licenses.get(source)
        sources[source] = {"train": v["train"], "valid": v["valid"], "mb": round(v["bytes"] / 1e6, 3),
                           "languages": sorted(v["languages"], key=lambda k: -v["languages"][k]),
                           "duplicates": v["duplicates"], "near_duplicates": v["near_duplicates"], **({"declared_license": declared} if declared else {})}
    examples = []
    for i, (kept, sim) in sorted(dropped.items())[:: max(1, len(dropped) // 30)][:30]:
        examples.append({"dropped": f"{entries[i]['source']}/{entries[i]['path']}", "kept": f"{entries[kept]['source']}/{entries[kept]['path']}", "similarity": round(sim, 3)})
    kept = [e for i, e in enumerate(entries) if i not in dropped]
    return {
        "train": sum(1 for e in kept if e["split"] == "train"),
        "valid": sum(1 for e in kept if e["split"] == "valid"),
        "bytes": sum(e["bytes"] for e in kept),
        "duplicates": sum(exact.values()),
        "near_duplicates": len(dropped),
        "near_duplicate_bytes": sum(entries[i]["bytes"] for i in dropped),
        "near_duplicate_rule": f"MinHash ({neardup.NUM_PERM} values) over {neardup.SHINGLE_TOKENS}-token shingles, LSH {neardup.NUM_PERM // neardup.ROWS}x{neardup.ROWS}, estimated Jaccard >= {neardup.THRESHOLD}; validation files never dropped",
        "near_duplicate_examples": examples,
        "reserved_skipped": reserved,
        "languages": languages,
        "sources": dict(sorted(sources.items())),
        "license_warnings": sorted(s for s, d in licenses.items() if _COPYLEFT.search(d)),
    }


def summary_line(summary: dict) -> str:
    return (f"corpus: {summary['train']} train files, {summary['valid']} validation files, {summary['bytes'] / 1e6:.1f} MB; "
            f"{summary['duplicates']} exact and {summary['near_duplicates']} near duplicates dropped ({summary['near_duplicate_bytes'] / 1e6:.1f} MB); "
            + ", ".join(f"{lang} {v['mb']:.1f} MB" for lang, v in summary["languages"].items()))


def bytes_per_token(corpus_dir: Path, tokenizer: Path, budget: int = 2_000_000) -> dict[str, float]:
    """UTF-8 bytes per token of `tokenizer` on each language of the training split, on
    up to `budget` bytes per language (files taken in sha256 order of their identity, a
    fixed pseudo-random sample)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer))
    picked: dict[str, list[tuple[str, str]]] = defaultdict(list)
    with open(corpus_dir / "train.jsonl") as fh:
        for line in fh:
            doc = json.loads(line)
            picked[doc["language"]].append((hashlib.sha256(f"{doc['source']}/{doc['path']}".encode()).hexdigest(), doc["text"]))
    out = {}
    for language, docs in sorted(picked.items()):
        n_bytes = n_tokens = 0
        for _, text in sorted(docs):
            if n_bytes >= budget:
                break
            n_bytes += len(text.encode())
            n_tokens += len(tok.encode(text, add_special_tokens=False).ids)
        out[language] = round(n_bytes / max(1, n_tokens), 3)
    return out


def read_split(corpus_dir: Path, split: str) -> list[dict]:
    path = corpus_dir / f"{split}.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: run `python -m lab corpus --out {corpus_dir}` first")
    with open(path) as fh:
        return [json.loads(line) for line in fh]


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m lab corpus", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("data/corpus"), help="output directory (default: data/corpus)")
    parser.add_argument("--sources", type=Path, default=SOURCES_FILE)
    parser.add_argument("--cache", type=Path, default=None, help="download cache (default: OUT/downloads)")
    parser.add_argument("--tokenizer", type=Path, default=Path(__file__).resolve().parents[2] / "engine/default_model/tokenizer.json",
                        help="report this tokenizer's bytes per token per language in summary.json")
    args = parser.parse_args(argv)
    build(args.out, args.sources, args.cache, tokenizer=args.tokenizer)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
