"""Build the unseen syntax benchmark's source files from pinned registry packages.

    python -m lab.syntax_bench.build [--cache data/syntax_bench_cache] [--check]

Reads `unseen/sources.toml`, fetches each package with its registry's own client (pip for PyPI,
`npm pack` for npm, `apt-get download` for Debian), unpacks it under the cache folder,
and copies a seeded choice of its source files (clean-parsing, not tests, not minified,
1.5-200 KB) with the package's licence into `unseen/sources/<language>/<package>/`
(its own folder: `sources/` holds the SAFIM benchmark's files). `unseen/manifest.json`
records every file's sha256 and its part: `tune` (may be looked at while improving the
checks) or `aside` (never tuned on; the reported figures), split by a seeded hash of the
file's path. `--check` rebuilds into a temporary folder and compares with the committed
manifest, so anyone can verify that the committed files are what the registries ship.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

import tree_sitter as ts

from grammars import get

HERE = Path(__file__).resolve().parent / "unseen"
SOURCES = HERE / "sources"  # rewritten whole by a build; never the SAFIM `sources/` beside it
MANIFEST = HERE / "manifest.json"
SEED = "infill-syntax-bench-2026-11-30"
FILES_PER_PACKAGE = 5
MIN_BYTES, MAX_BYTES = 1_500, 200_000
MAX_LINE = 240  # longer lines mean generated or minified code
EXTENSIONS = {
    "python": (".py",),
    "javascript": (".js", ".mjs", ".cjs"),
    "typescript": (".ts",),
    "go": (".go",),
    "rust": (".rs",),
}
SKIP_PARTS = ("test", "tests", "__tests__", "testdata", "benches", "examples", "dist", "bench", "fixtures", "vendor", "build")


@dataclass(frozen=True)
class Package:
    language: str
    kind: str
    name: str
    version: str
    license: str

    @property
    def slug(self) -> str:
        return self.name.replace("@", "").replace("/", "-")


def read_packages(path: Path = HERE / "sources.toml") -> list[Package]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return [Package(**entry) for entry in data["package"]]


def seeded_rank(text: str) -> str:
    return hashlib.sha256(f"{SEED}:{text}".encode()).hexdigest()


def part_of(relpath: str) -> str:
    """`aside` or `tune`, by a seeded hash of the file's path inside unseen/sources/ (half each)."""
    return "aside" if int(seeded_rank(relpath)[:8], 16) % 2 == 0 else "tune"


def _run(cmd: list[str], cwd: Path) -> None:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"error: {' '.join(cmd)} failed: {done.stderr.strip()[-400:]}")


def fetch(package: Package, cache: Path) -> Path:
    """Download and unpack one package; returns the folder it was unpacked into."""
    target = cache / f"{package.kind}-{package.slug}-{package.version}"
    if (target / ".done").is_file():
        return target
    shutil.rmtree(target, ignore_errors=True)
    download = target / "download"
    unpacked = target / "unpacked"
    download.mkdir(parents=True)
    unpacked.mkdir()
    if package.kind == "pypi":
        _run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(download), f"{package.name}=={package.version}"], cache)
    elif package.kind == "npm":
        _run(["npm", "pack", "--silent", f"{package.name}@{package.version}", "--pack-destination", str(download)], cache)
    elif package.kind == "deb":
        _run(["apt-get", "download", "-q", f"{package.name}={package.version}"], download)
    else:
        raise SystemExit(f"error: unknown package kind {package.kind!r}")
    for archive in sorted(download.iterdir()):
        if archive.suffix in (".whl", ".zip"):
            with zipfile.ZipFile(archive) as zf:
                zf.extractall(unpacked)
        elif archive.name.endswith((".tar.gz", ".tgz")):
            with tarfile.open(archive) as tf:
                tf.extractall(unpacked, filter="data")
        elif archive.suffix == ".deb":
            _run(["dpkg-deb", "-x", str(archive), str(unpacked)], cache)
    (target / ".done").write_text("ok\n")
    return target


def _is_candidate(path: Path, root: Path, language: str) -> bool:
    rel = path.relative_to(root)
    name = path.name
    if not name.endswith(EXTENSIONS[language]) or name.endswith((".d.ts", ".min.js")) or name.endswith("_test.go"):
        return False
    if any(part.lower() in SKIP_PARTS for part in rel.parts[:-1]) or "test" in name.lower():
        return False
    size = path.stat().st_size
    if not MIN_BYTES <= size <= MAX_BYTES:
        return False
    text = path.read_text(encoding="utf-8", errors="replace")
    if "\ufffd" in text or max((len(line) for line in text.split("\n")), default=0) > MAX_LINE:
        return False
    tree = ts.Parser(get(language).ts_language()).parse(text.encode("utf-8"))
    return not tree.root_node.has_error


def _license_files(unpacked: Path, package: Package) -> list[Path]:
    found = [p for p in unpacked.rglob("*") if p.is_file() and p.name.upper().startswith(("LICENSE", "LICENCE", "COPYING"))]
    if package.kind == "deb":
        found += [p for p in unpacked.glob("usr/share/doc/*/copyright")]
    return sorted(found, key=lambda p: (len(p.parts), str(p)))[:2]


def build(cache: Path, out: Path) -> dict:
    """Fetch every package, choose its files, copy them under `out`; returns the manifest."""
    files = []
    for package in read_packages():
        unpacked = fetch(package, cache) / "unpacked"
        candidates = [p for p in sorted(unpacked.rglob("*")) if p.is_file() and _is_candidate(p, unpacked, package.language)]
        chosen = sorted(candidates, key=lambda p: seeded_rank(f"{package.name}/{p.relative_to(unpacked)}"))[:FILES_PER_PACKAGE]
        dest_root = out / package.language / package.slug
        for path in sorted(chosen):
            rel = path.relative_to(unpacked)
            dest = dest_root / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
            relpath = dest.relative_to(out).as_posix()
            files.append({
                "path": relpath,
                "language": package.language,
                "package": f"{package.kind}:{package.name}@{package.version}",
                "license": package.license,
                "sha256": hashlib.sha256(dest.read_bytes()).hexdigest(),
                "part": part_of(relpath),
            })
        for index, lic in enumerate(_license_files(unpacked, package)):
            dest_root.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(lic, dest_root / ("LICENSE" if index == 0 else f"LICENSE.{index}"))
        print(f"{package.language:10} {package.name}@{package.version}: {len(chosen)} of {len(candidates)} files", file=sys.stderr)
    return {"seed": SEED, "files": files}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.syntax_bench.build", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", default="data/syntax_bench_cache", help="where packages are downloaded and unpacked")
    parser.add_argument("--check", action="store_true", help="rebuild elsewhere and compare with the committed manifest")
    args = parser.parse_args(argv)
    cache = Path(args.cache).resolve()
    cache.mkdir(parents=True, exist_ok=True)
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            manifest = build(cache, Path(tmp))
        committed = json.loads(MANIFEST.read_text(encoding="utf-8"))
        same = manifest == committed
        print("the committed sources match the registries" if same else "error: the rebuilt manifest differs from manifest.json")
        return 0 if same else 1
    shutil.rmtree(SOURCES, ignore_errors=True)
    manifest = build(cache, SOURCES)
    MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    counts: dict[str, dict[str, int]] = {}
    for f in manifest["files"]:
        counts.setdefault(f["language"], {"tune": 0, "aside": 0})[f["part"]] += 1
    print(json.dumps(counts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
