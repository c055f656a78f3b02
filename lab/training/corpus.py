"""`infill corpus`: build the embedded model's training corpus, reproducibly.

Sources are listed in corpus_sources.toml (the CPython standard library plus pinned PyPI
and npm packages). Files are filtered (size, minified bundles, invalid test data),
deduplicated by content hash, and split into train/validation *by file* with a hash of
the file's identity so the split is stable across rebuilds. The output directory gets
`train.jsonl`, `valid.jsonl` (one {"path", "source", "language", "text"} per line) and
`files.tsv` (exactly what went in: split, sha256, source, path).
"""
from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

SOURCES_FILE = Path(__file__).with_name("corpus_sources.toml")
MAX_FILE_BYTES = 200_000
MIN_FILE_BYTES = 64
VALID_FRACTION = 0.02
# Nothing from evaluation sets may enter the corpus.
EXCLUDED_MARKERS = ("human_eval", "humaneval", "human-eval", "mbpp", "safim")
LANGUAGE_BY_SUFFIX = {".py": "python", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".ts": "typescript"}


@dataclass
class CorpusFile:
    source: str  # e.g. "stdlib-3.11.7", "pypi:requests==2.34.2"
    path: str
    language: str
    text: str


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


def pypi_files(name: str, version: str, cache: Path) -> Iterator[CorpusFile]:
    target = (cache / f"pypi-{name}-{version}").resolve()
    if not target.exists() or not any(target.iterdir()):
        target.mkdir(parents=True, exist_ok=True)
        _run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version", "3.12", "-d", str(target), f"{name}=={version}"], cache)
    for archive in sorted(target.glob("*.whl")):
        with zipfile.ZipFile(archive) as zf:
            for info in sorted(zf.infolist(), key=lambda i: i.filename):
                if info.filename.endswith(".py") and ".dist-info/" not in info.filename:
                    data = zf.read(info)
                    text = _decode(data)
                    if text is not None and _acceptable(info.filename, data):
                        yield CorpusFile(f"pypi:{name}=={version}", info.filename, "python", text)


def npm_files(name: str, version: str, cache: Path) -> Iterator[CorpusFile]:
    target = cache / f"npm-{name}-{version}"
    if not target.exists() or not any(target.glob("*.tgz")):
        target.mkdir(parents=True, exist_ok=True)
        _run(["npm", "pack", "--silent", f"{name}@{version}"], target)
    for archive in sorted(target.glob("*.tgz")):
        with tarfile.open(archive) as tf:
            for member in sorted(tf.getmembers(), key=lambda m: m.name):
                suffix = Path(member.name).suffix
                if member.isfile() and suffix in LANGUAGE_BY_SUFFIX:
                    handle = tf.extractfile(member)
                    data = handle.read() if handle else b""
                    text = _decode(data)
                    if text is not None and _acceptable(member.name, data):
                        yield CorpusFile(f"npm:{name}@{version}", member.name, LANGUAGE_BY_SUFFIX[suffix], text)


def all_files(sources_file: Path, cache: Path, log=print) -> Iterator[CorpusFile]:
    sources = tomllib.loads(sources_file.read_text())
    if sources.get("stdlib", {}).get("include", False):
        log("corpus: CPython standard library")
        yield from stdlib_files()
    for pkg in sources.get("pypi", []):
        log(f"corpus: pypi {pkg['name']}=={pkg['version']}")
        yield from pypi_files(pkg["name"], pkg["version"], cache)
    for pkg in sources.get("npm", []):
        log(f"corpus: npm {pkg['name']}@{pkg['version']}")
        yield from npm_files(pkg["name"], pkg["version"], cache)


def split_of(source: str, path: str) -> str:
    digest = hashlib.sha256(f"{source}/{path}".encode()).digest()
    return "valid" if int.from_bytes(digest[:4], "big") / 2**32 < VALID_FRACTION else "train"


def build(out_dir: Path, sources_file: Path = SOURCES_FILE, cache: Path | None = None, log=print) -> dict:
    out_dir.mkdir(parents=True, exist_ok=True)
    cache = cache or out_dir / "downloads"
    cache.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    counts = {"train": 0, "valid": 0, "duplicates": 0, "bytes": 0}
    with open(out_dir / "train.jsonl", "w") as train, open(out_dir / "valid.jsonl", "w") as valid, open(out_dir / "files.tsv", "w") as listing:
        listing.write("split\tsha256\tsource\tpath\n")
        for f in all_files(sources_file, cache, log):
            digest = hashlib.sha256(f.text.encode()).hexdigest()
            if digest in seen:
                counts["duplicates"] += 1
                continue
            seen.add(digest)
            split = split_of(f.source, f.path)
            (valid if split == "valid" else train).write(json.dumps({"path": f.path, "source": f.source, "language": f.language, "text": f.text}) + "\n")
            listing.write(f"{split}\t{digest}\t{f.source}\t{f.path}\n")
            counts[split] += 1
            counts["bytes"] += len(f.text.encode())
    (out_dir / "summary.json").write_text(json.dumps(counts, indent=2) + "\n")
    log(f"corpus: {counts['train']} train files, {counts['valid']} validation files, {counts['duplicates']} duplicates dropped, {counts['bytes'] / 1e6:.1f} MB")
    return counts


def read_split(corpus_dir: Path, split: str) -> list[dict]:
    path = corpus_dir / f"{split}.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: run `infill corpus --out {corpus_dir}` first")
    with open(path) as fh:
        return [json.loads(line) for line in fh]


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="infill corpus", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("data/corpus"), help="output directory (default: data/corpus)")
    parser.add_argument("--sources", type=Path, default=SOURCES_FILE)
    args = parser.parse_args(argv)
    build(args.out, args.sources)
    return 0
