"""Real lines with their repository around them, as `python -m lab.workspace.real_lines`
scores them (same packages, same seeded lines): the cursor after a line's indentation,
the rest of the line to write, and the package's source tree with every sampled line
blanked as the workspace, so no request holds another item's answer.

The packages are the reserved unseen ones (lab/syntax_bench/unseen/sources.toml): in
neither the training corpus nor the other benchmarks. TUNE ones are for tuning; ASIDE ones
are only for reporting; CHECK ones check a change the ASIDE figures suggested.
"""
from __future__ import annotations

import collections
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

CACHE = Path(os.environ.get("REAL_LINES_CACHE", "/tmp/real-lines-cache"))
SKIP = ("#", "//", "*", "/*", "@", '"""', "'''")  # comment and decorator lines are not sampled


@dataclass(frozen=True)
class Package:
    registry: str  # "pypi" | "npm"
    spec: str  # pinned: toolz==1.2.0, semver@7.6.3
    source: str  # the folder inside the unpacked archive that is the workspace
    globs: tuple[str, ...]  # the files lines are sampled from, inside it

    @property
    def language(self) -> str:
        return "python" if self.registry == "pypi" else "javascript"

    def flag(self, name: str) -> str:
        """This package as one `NAME=registry:spec:source:globs` string, the form the
        real-lines runs recorded in docs/measurements/ name their packages in."""
        return f"{name}={self.registry}:{self.spec}:{self.source}:{','.join(self.globs)}"


TUNE = {
    "toolz": Package("pypi", "toolz==1.2.0", ".", ("toolz/*.py", "toolz/curried/*.py")),
    "marshmallow": Package("pypi", "marshmallow==4.4.0", "src", ("marshmallow/*.py",)),
    "semver": Package("npm", "semver@7.6.3", ".", ("classes/*.js", "functions/*.js", "ranges/*.js", "internal/*.js")),
    "knex": Package("npm", "knex@3.1.0", "lib", ("**/*.js",)),
}
ASIDE = {
    "boltons": Package("pypi", "boltons==26.2.0", ".", ("boltons/*.py",)),
    "more-itertools": Package("pypi", "more-itertools==11.2.1", ".", ("more_itertools/*.py",)),
    "qs": Package("npm", "qs@6.13.0", "lib", ("*.js",)),
    "ws": Package("npm", "ws@8.18.0", "lib", ("*.js",)),
}
# Packages for checking a change that the kept-aside ones suggested, before it is kept:
# once ASIDE figures have shaped a change, they no longer measure it on unseen code. Not in
# the training corpus (lab/training/corpus_sources.toml) nor the other benchmarks; chosen
# for small, frequent releases of plain source (lab/evaluation/real_edits.py), not by results.
CHECK = {
    "humanize": Package("pypi", "humanize==4.17.0", "src", ("humanize/*.py",)),
    "tomlkit": Package("pypi", "tomlkit==0.15.2", ".", ("tomlkit/*.py",)),
    "body-parser": Package("npm", "body-parser@2.2.0", ".", ("index.js", "lib/*.js", "lib/types/*.js")),
    "debug": Package("npm", "debug@4.4.1", "src", ("*.js",)),
}
PACKAGES = {**TUNE, **ASIDE, **CHECK}


@dataclass(frozen=True)
class Item:
    id: str
    package: str
    language: str
    reference: str  # the line, stripped
    prefix: str
    suffix: str
    workspace: str  # "" without a workspace
    filename: str
    line: int = 0  # the line's index in its file


def source_dir(name: str) -> Path:
    """The package's source folder, fetched from its registry once into CACHE."""
    pkg = PACKAGES[name]
    folder = CACHE / name
    if not folder.exists():
        tmp = Path(tempfile.mkdtemp())
        if pkg.registry == "pypi":
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", "-d", tmp, pkg.spec], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            archive = next(tmp.glob("*.tar.gz"))
        else:
            subprocess.run(["npm", "pack", "--silent", pkg.spec], cwd=tmp, check=True, stdout=subprocess.DEVNULL)
            archive = next(tmp.glob("*.tgz"))
        folder.mkdir(parents=True)
        with tarfile.open(archive) as tar:
            tar.extractall(folder, filter="data")
    top = next(p for p in folder.iterdir() if p.is_dir())
    return (top / pkg.source).resolve()


def sample(name: str, n: int) -> tuple[Path, list[tuple[Path, int]]]:
    """(the source folder, n seeded (file, line index) picks of non-trivial lines)."""
    root = source_dir(name)
    candidates = []
    for pattern in PACKAGES[name].globs:
        for path in sorted(root.glob(pattern)):
            for i, line in enumerate(path.read_text(errors="replace").split("\n")):
                stripped = line.strip()
                if len(stripped) >= 8 and not stripped.startswith(SKIP):
                    candidates.append((path.relative_to(root), i))
    random.seed(f"real-lines-{name}")
    return root, random.sample(candidates, min(n, len(candidates)))


def blanked_copy(root: Path, picks: list[tuple[Path, int]], into: Path) -> Path:
    """A copy of `root` under `into` with every picked line blanked (indentation kept)."""
    copy = into / root.name
    shutil.copytree(root, copy)
    by_file = collections.defaultdict(list)
    for relative, i in picks:
        by_file[relative].append(i)
    for relative, indices in by_file.items():
        lines = (copy / relative).read_text(errors="replace").split("\n")
        for i in indices:
            lines[i] = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
        (copy / relative).write_text("\n".join(lines))
    return copy


def items(names: list[str], n: int, into: Path, workspace: bool = True) -> list[Item]:
    """n items per package. With `workspace`, each package's blanked copy is made under
    `into` and is both the items' workspace and the text their requests see (no request
    holds another item's answer); without, a request sees its original file."""
    out = []
    for name in names:
        root, picks = sample(name, n)
        copy = blanked_copy(root, picks, into / name) if workspace else None
        for relative, i in picks:
            reference = (root / relative).read_text(errors="replace").split("\n")[i].strip()
            lines = ((copy or root) / relative).read_text(errors="replace").split("\n")
            indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
            out.append(Item(f"{name}:{relative}:{i + 1}", name, PACKAGES[name].language, reference, "\n".join(lines[:i] + [indent]),
                            "\n" + "\n".join(lines[i + 1 :]), str(copy) if copy else "", str(copy / relative) if copy else "", i))
    return out
