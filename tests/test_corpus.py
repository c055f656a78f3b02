"""The corpus builder on tiny fake sources (nothing is downloaded): a wheel, an npm
tarball and an extracted Debian package are laid out in the download cache."""
from __future__ import annotations

import io
import json
import random
import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from lab.training import corpus, neardup
from lab.training.data import DataConfig, ExampleStream, sampling_weight
from lab.training.structure import file_weight, structure

PY_DOCUMENTED = '''"""Small helpers."""


def clamp(value, low, high):
    """Return value limited to [low, high].

    >>> clamp(5, 0, 3)
    3
    """
    return max(low, min(high, value))


class Stack:
    """A last-in first-out stack."""

    def push(self, item):
        """Put item on top."""
        self.items.append(item)
'''

PY_PLAIN = '''def add(a, b):
    return a + b


def sub(a, b):
    return a - b
'''


def _module(seed: int, functions: int = 30) -> str:
    """A deterministic, varied Python module (identifiers and constants from `seed`)."""
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "total", "count", "value", "items", "index", "result", "buffer", "offset"]
    out = []
    for i in range(functions):
        a, b, c = rng.sample(words, 3)
        out.append(f"def {a}_{b}_{i}({a}, {b}):\n    {c} = {a} * {rng.randint(2, 99)} + {b}\n    if {c} > {rng.randint(100, 999)}:\n        return {c} - {a}\n    return [{a}, {b}, {c}, {rng.randint(0, 9)}]\n\n")
    return "".join(out)


def _fake_sources(cache: Path, root: Path) -> Path:
    """A wheel, an npm tarball, an extracted Debian package, and the toml naming them."""
    base = _module(1)
    near = base.replace("alpha_beta", "alpha_bet", 1).replace("return [", "return (", 1) + "# vendored copy\n"
    wheel_dir = cache / "pypi-fakepkg-1.0"
    wheel_dir.mkdir(parents=True)
    with zipfile.ZipFile(wheel_dir / "fakepkg-1.0-py3-none-any.whl", "w") as zf:
        zf.writestr("fakepkg/helpers.py", PY_DOCUMENTED)
        zf.writestr("fakepkg/plain.py", PY_PLAIN)
        zf.writestr("fakepkg/core.py", base)
        zf.writestr("fakepkg/vendored/core_copy.py", near)  # near-duplicate of core.py
        zf.writestr("fakepkg/plain_copy.py", PY_PLAIN)  # exact duplicate
        zf.writestr("fakepkg/_vendor/more_itertools/recipes.py", "def take(n, iterable):\n    return list(islice(iterable, n))\n" * 3)
        zf.writestr("fakepkg/humaneval_tasks.py", "def task():\n    '''benchmark data must never enter'''\n    return 1\n" * 2)
        zf.writestr("fakepkg-1.0.dist-info/METADATA", "Metadata-Version: 2.4\nName: fakepkg\nLicense-Expression: MIT\n\nlong text\n")
    npm_dir = cache / "npm-fakejs-2.0.0"
    npm_dir.mkdir(parents=True)
    with tarfile.open(npm_dir / "fakejs-2.0.0.tgz", "w:gz") as tf:
        members = {
            "package/package.json": json.dumps({"name": "fakejs", "license": "ISC"}),
            "package/src/sum.js": "/**\n * Sum of an array.\n * @example sum([1, 2]) // 3\n */\nexport function sum(xs) {\n  return xs.reduce((a, b) => a + b, 0);\n}\n",
            "package/src/types.ts": "export interface Point {\n  x: number;\n  y: number;\n}\n\nexport function norm(p: Point): number {\n  return Math.hypot(p.x, p.y);\n}\n",
            "package/src/types.d.ts": "export declare function norm(p: { x: number; y: number }): number;\n// declarations only\n",
            "package/dist/bundle.js": "var a=1;" * 40,
        }
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    deb = cache / "deb-librust-fake-dev-0.1.0-1" / "root"
    crate = deb / "usr/share/cargo/registry/fake-0.1.0/src"
    crate.mkdir(parents=True)
    (crate / "lib.rs").write_text("/// Adds one.\n///\n/// ```\n/// assert_eq!(fake::inc(1), 2);\n/// ```\npub fn inc(x: i32) -> i32 {\n    x + 1\n}\n\n#[test]\nfn inc_works() {\n    assert_eq!(inc(1), 2);\n}\n")
    gocode = deb / "usr/share/gocode/src/example.com/fake"
    (gocode / "testdata").mkdir(parents=True)
    (gocode / "fake.go").write_text("package fake\n\n// Inc returns x plus one.\nfunc Inc(x int) int {\n\treturn x + 1\n}\n\nfunc helper() int {\n\treturn 2\n}\n")
    (gocode / "testdata" / "broken.go").write_text("package broken\n\nthis is deliberately not Go at all, it is test input\n")
    doc = deb / "usr/share/doc/librust-fake-dev"
    doc.mkdir(parents=True)
    (doc / "copyright").write_text("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\nFiles: *\nCopyright: someone\nLicense: MIT or Apache-2.0\n\nFiles: debian/*\nLicense: GPL-2+\n")
    sources = root / "sources.toml"
    sources.write_text(
        '[[pypi]]\nname = "fakepkg"\nversion = "1.0"\nlicense = "MIT"\n'
        '[[npm]]\nname = "fakejs"\nversion = "2.0.0"\nlicense = "ISC"\ninclude = ["package/src/"]\n'
        '[[debian]]\nname = "librust-fake-dev"\nversion = "0.1.0-1"\nlicense = "MIT OR Apache-2.0"\n'
    )
    return sources


def test_build_from_fake_sources(tmp_path):
    cache = tmp_path / "cache"
    sources = _fake_sources(cache, tmp_path)
    out = tmp_path / "corpus"
    summary = corpus.build(out, sources, cache, log=lambda *_: None)
    docs = corpus.read_split(out, "train") + corpus.read_split(out, "valid")
    paths = {d["path"] for d in docs}
    assert {"fakepkg/helpers.py", "fakepkg/plain.py", "fakepkg/core.py", "package/src/sum.js", "package/src/types.ts",
            "usr/share/cargo/registry/fake-0.1.0/src/lib.rs", "usr/share/gocode/src/example.com/fake/fake.go"} <= paths
    # Dropped: exact and near duplicates, reserved vendored code, benchmark data, declarations, bundles, testdata.
    for gone in ("fakepkg/plain_copy.py", "fakepkg/vendored/core_copy.py", "fakepkg/_vendor/more_itertools/recipes.py",
                 "fakepkg/humaneval_tasks.py", "package/src/types.d.ts", "package/dist/bundle.js",
                 "usr/share/gocode/src/example.com/fake/testdata/broken.go"):
        assert gone not in paths, gone
    assert summary["duplicates"] == 1 and summary["near_duplicates"] == 1 and summary["reserved_skipped"] == 1
    example = summary["near_duplicate_examples"][0]
    assert example["dropped"].endswith("fakepkg/vendored/core_copy.py") and example["kept"].endswith("fakepkg/core.py")
    assert example["similarity"] >= neardup.THRESHOLD
    by_lang = {d["language"] for d in docs}
    assert by_lang == {"python", "javascript", "typescript", "rust", "go"}
    assert set(summary["languages"]) == by_lang
    # Every file carries its structure weight; the split is the stable hash of its identity.
    for d in docs:
        assert d["weight"] == file_weight(d["text"], d["language"])
    for split in ("train", "valid"):
        for d in corpus.read_split(out, split):
            assert corpus.split_of(d["source"], d["path"]) == split
    listing = (out / "files.tsv").read_text().splitlines()
    assert listing[0] == "split\tsha256\tsource\tpath" and len(listing) == len(docs) + 1
    src = summary["sources"]
    assert src["pypi:fakepkg==1.0"]["declared_license"] == "MIT"
    assert src["npm:fakejs@2.0.0"]["declared_license"] == "ISC"
    assert src["deb:librust-fake-dev=0.1.0-1"]["declared_license"] == "MIT or Apache-2.0"  # debian/* packaging licence ignored
    assert summary["license_warnings"] == []
    assert summary["train"] + summary["valid"] == len(docs)
    assert not (out / "staging.jsonl").exists()


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="needs dpkg-deb (Debian)")
def test_debian_package_is_extracted_from_its_deb(tmp_path):
    tree = tmp_path / "pkg"
    (tree / "DEBIAN").mkdir(parents=True)
    (tree / "DEBIAN" / "control").write_text("Package: golang-fake-dev\nVersion: 1.0-1\nArchitecture: all\nMaintainer: x <x@example.com>\nDescription: fake\n")
    src = tree / "usr/share/gocode/src/example.com/fake"
    src.mkdir(parents=True)
    (src / "fake.go").write_text("package fake\n\n// Two returns two, always, whatever happens.\nfunc Two() int {\n\treturn 2\n}\n")
    target = tmp_path / "cache" / "deb-golang-fake-dev-1.0-1"
    target.mkdir(parents=True)
    subprocess.run(["dpkg-deb", "--build", "--root-owner-group", str(tree), str(target / "golang-fake-dev_1.0-1_all.deb")], check=True, capture_output=True)
    files = list(corpus.debian_files("golang-fake-dev", "1.0-1", tmp_path / "cache"))
    assert [(f.source, f.path, f.language) for f in files] == [("deb:golang-fake-dev=1.0-1", "usr/share/gocode/src/example.com/fake/fake.go", "go")]


def test_sources_are_checked_for_reserved_names_and_licences(tmp_path):
    bad = tmp_path / "s.toml"
    cases = [
        ('[[pypi]]\nname = "more-itertools"\nversion = "10.0.0"\nlicense = "MIT"\n', "reserved"),
        ('[[debian]]\nname = "librust-itertools-dev"\nversion = "0.10.3-1"\nlicense = "MIT OR Apache-2.0"\n', "reserved"),
        ('[[npm]]\nname = "somelib"\nversion = "1.0.0"\nlicense = "GPL-3.0-only"\n', "licence"),
        ('[[npm]]\nname = "somelib"\nversion = "1.0.0"\n', "lacks"),
    ]
    for text, error in cases:
        bad.write_text(text)
        with pytest.raises(ValueError, match=error):
            corpus.load_sources(bad)
    assert corpus.license_ok("MIT OR Apache-2.0") and corpus.license_ok("(MIT OR Apache-2.0) AND BSD-3-Clause")
    assert corpus.license_ok("MPL-2.0 OR MIT")  # a permissive choice is enough
    assert not corpus.license_ok("MPL-2.0") and not corpus.license_ok("MIT AND LGPL-2.1-only") and not corpus.license_ok("")
    assert corpus.RESERVED_PATH.search("pip/_vendor/tomlkit/api.py") and corpus.RESERVED_PATH.search("usr/share/gocode/src/github.com/spf13/cobra/command.go")
    assert not corpus.RESERVED_PATH.search("pandas/core/frame.py")


def test_the_configured_sources_are_valid_and_keep_the_original_ones_first():
    sources = corpus.load_sources(corpus.SOURCES_FILE)
    names = [p["name"] for p in sources["pypi"]]
    assert names[:14] == ["requests", "flask", "click", "jinja2", "werkzeug", "attrs", "rich", "httpx", "django", "sqlalchemy", "black", "networkx", "starlette", "fastapi"]
    assert [p["name"] for p in sources["npm"]][:8] == ["lodash", "express", "axios", "commander", "moment", "async", "underscore", "eslint"]
    assert any(p["name"].startswith("golang-") for p in sources["debian"]) and any(p["name"].startswith("librust-") for p in sources["debian"])


def test_benchmark_items_come_from_validation_files():
    """The dev and held-out sets are cut from validation files: the split of their files
    (a hash of source and path) must never change."""
    for path in (Path("lab/bench_data/dev_lines.jsonl"), Path("lab/bench_data/heldout_lines.jsonl")):
        for line in path.read_text().splitlines():
            item = json.loads(line)
            source, file_path = item["source"].split("/", 1)
            assert corpus.split_of(source, file_path) == "valid", item["source"]


def test_near_duplicates_are_found_and_distinct_files_are_not():
    base = _module(7)
    renamed = base.replace("alpha", "alfa", 2).replace("return [", "return (", 1)
    reindented = "\n".join("  " + line for line in base.splitlines())  # whitespace is not a token
    header = "# Copyright someone else, MIT licence\n# vendored copy\n" + base
    other = _module(8)
    sig = {name: neardup.signature(text) for name, text in [("base", base), ("renamed", renamed), ("reindented", reindented), ("header", header), ("other", other)]}
    assert neardup.similarity(sig["base"], sig["reindented"]) == 1.0
    assert neardup.similarity(sig["base"], sig["renamed"]) >= 0.8
    assert neardup.similarity(sig["base"], sig["header"]) >= 0.8
    assert neardup.similarity(sig["base"], sig["other"]) < 0.3
    assert (neardup.signature(base) == sig["base"]).all()  # deterministic
    index = neardup.NearDuplicateIndex()
    index.add("base", sig["base"])
    assert index.match(sig["renamed"])[0] == "base"
    assert index.match(sig["other"]) is None
    # The estimate follows the true Jaccard of the shingle sets.
    a, b = set(neardup.shingle_hashes(base).tolist()), set(neardup.shingle_hashes(renamed).tolist())
    assert abs(len(a & b) / len(a | b) - neardup.similarity(sig["base"], sig["renamed"])) < 0.12


def test_validation_files_are_never_dropped_as_near_duplicates():
    text = _module(3)
    copy = text + "# one more line\n"
    entries = [{"split": "train"}, {"split": "valid"}, {"split": "train"}]
    sigs = [neardup.signature(text), neardup.signature(copy), neardup.signature(_module(4))]
    dropped = corpus._near_duplicates(entries, sigs, log=lambda *_: None)
    assert dropped.keys() == {0} and dropped[0][0] == 1  # the training copy goes, even though it came first


def test_structure_weights_follow_the_documented_rule():
    assert file_weight(PY_DOCUMENTED, "python") == 3.0  # all documented, doctest
    assert file_weight(PY_PLAIN, "python") == 1.0
    assert file_weight("import os\nfrom x import y\n__all__ = ['y']\n", "python") == 0.5
    s = structure("import unittest\n\nclass T(unittest.TestCase):\n    def test_a(self):\n        self.assertTrue(True)\n", "python")
    assert (s.definitions, s.documented, s.tests) == (2, 0, 1)
    multi_line = 'def f(\n    a,\n    b,\n):\n    """Doc."""\n    return a\n'
    assert structure(multi_line, "python").documented == 1
    generated = "# Code generated by protoc-gen-go. DO NOT EDIT.\n" + PY_PLAIN
    assert file_weight(generated, "python") == 0.1
    table = "TABLE = [\n" + "".join(f"    {i}, {i * 3}, 'x{i}',\n" for i in range(40)) + "]\n"
    assert structure(table, "python").data_only and file_weight(table, "python") == 0.1
    js = "/**\n * Twice.\n * @example twice(2)\n */\nexport function twice(x) {\n  return 2 * x;\n}\n\nfunction bare(y) {\n  return y;\n}\n"
    s = structure(js, "javascript")
    assert (s.definitions, s.documented, s.tests) == (2, 1, 1) and file_weight(js, "javascript") == 2.25
    go = "package p\n\n// Inc adds one.\nfunc Inc(x int) int { return x + 1 }\n\nfunc TestInc(t *testing.T) {}\n"
    s = structure(go, "go")
    assert (s.definitions, s.documented, s.tests) == (2, 1, 1)
    rust = "/// Adds.\n#[inline]\npub fn add(a: i32, b: i32) -> i32 { a + b }\n\nfn plain() {}\n\n#[test]\nfn t() {}\n"
    s = structure(rust, "rust")
    assert (s.definitions, s.documented, s.tests) == (3, 1, 1)
    assert 0.05 <= file_weight("x = 1\n", "unknown-language") <= 3.0


def test_example_stream_samples_by_the_stored_weight(tmp_path):
    from engine.tokenizer import Tokenizer

    tok = Tokenizer.from_file(Path("engine/default_model/tokenizer.json"))
    text = PY_PLAIN * 3
    docs = [{"text": text, "language": "python", "weight": 3.0}, {"text": text, "language": "python", "weight": 1.0}, {"text": text, "language": "python"}]
    stream = ExampleStream(docs, tok, DataConfig(), seed=0)
    assert stream.weights[0] == pytest.approx(3 * stream.weights[1]) and stream.weights[1] == stream.weights[2]
    assert sampling_weight(docs[0]) == pytest.approx(len(text) ** 0.8 * 3)


def test_bench_overlap_finds_items_copied_into_training_files(tmp_path):
    from lab.training import bench_overlap

    body = "".join(f"line_{i} = compute({i}, 'x')\n" for i in range(20))
    item = {"id": "python-1", "source": "pypi:orig==1.0/orig/mod.py", "prefix": body[: body.index("line_10")], "middle": "line_10 = compute(10, 'x')\n", "suffix": body[body.index("line_11"):]}
    bench = tmp_path / "items.jsonl"
    bench.write_text(json.dumps(item) + "\n")
    old, new = tmp_path / "old", tmp_path / "new"
    for d in (old, new):
        d.mkdir()
        (d / "valid.jsonl").write_text(json.dumps({"source": "pypi:orig==1.0", "path": "orig/mod.py", "text": body}) + "\n")
    (old / "train.jsonl").write_text(json.dumps({"source": "pypi:other==1.0", "path": "a.py", "text": "x = 1\n"}) + "\n")
    (old / "files.tsv").write_text("split\tsha256\tsource\tpath\ntrain\t0\tpypi:other==1.0\ta.py\nvalid\t0\tpypi:orig==1.0\torig/mod.py\n")
    vendored = "# vendored\nimport os\n" + body.replace("line_", "    line_")  # re-indented copy
    (new / "train.jsonl").write_text("".join(json.dumps(d) + "\n" for d in [{"source": "pypi:other==1.0", "path": "a.py", "text": "x = 1\n"},
                                                                        {"source": "npm:@scope/new@2.0", "path": "package/v.py", "text": vendored}]))
    clean = bench_overlap.check(old, [bench], baseline=old)
    assert clean["item_files_not_in_validation"] == [] and clean["items_found_in_training_files"] == 0
    leaked = bench_overlap.check(new, [bench], baseline=old)
    assert leaked["items_found_in_training_files"] == 1 and leaked["new_sources_with_items"] == ["npm:@scope/new@2.0"]
    (new / "valid.jsonl").write_text("")
    assert bench_overlap.check(new, [bench])["item_files_not_in_validation"] == ["pypi:orig==1.0/orig/mod.py"]
