"""The layout's rules, checked on the source (docs/layout.md):

- no shipped module (engine/, grammars/, infill_lsp/; the CLI included) imports the lab:
  the lab runs by its own entry, `python -m lab`;
- the engine never imports a front end (infill_lsp);
- the grammars never import the engine (the model included);
- the model never imports the sampler;
- no import circles among the shipped modules;
- importing the engine's types (and the serving core) does not import torch;
- the built wheel holds no training, evaluation, benchmark, fixture or other lab-only
  module, and none of its modules imports the lab;
- the sampler's driver, its steps and Engine.stream stay small.

Imports are read from the AST of every module, function-level ones included; a string
that names a module of a forbidden package (what `importlib.import_module` would be
handed) counts as an import too, so a detour through importlib is caught as well.
The circle check builds the graph of import statements, module- and function-level
(a function-level import still runs, only later), leaving out `if TYPE_CHECKING:` blocks
(never run) and a module's imports of its own parent packages (Python runs those
first whatever the module says).
"""
from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ("engine", "grammars", "infill_lsp")
MODULE_NAME = re.compile(r"^(engine|grammars|infill_lsp|lab)(\.[A-Za-z_]\w*)*$")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> Iterator[tuple[int, str]]:
    """(line, imported module) for every import in a file, and every string naming one."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    docstrings = {id(node.body[0].value) for node in ast.walk(tree) if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body and isinstance(node.body[0], ast.Expr)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            yield node.lineno, base
            for alias in node.names:  # `from engine import api` imports engine.api
                yield node.lineno, f"{base}.{alias.name}"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings and MODULE_NAME.match(node.value):
            yield node.lineno, node.value


def runtime_import_statements(path: Path) -> Iterator[tuple[int, str, tuple[str, ...]]]:
    """(line, module, names) for every import statement that can run: module- and
    function-level, not inside `if TYPE_CHECKING:`. `from X import a, b` gives (X, (a, b))."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]

    def type_checking_only(node: ast.AST) -> bool:
        test = node.test if isinstance(node, ast.If) else None
        return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")

    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if type_checking_only(node):
            todo.extend(node.orelse)  # type: ignore[attr-defined]
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, ()
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            yield node.lineno, base, tuple(alias.name for alias in node.names)
        todo.extend(ast.iter_child_nodes(node))


def import_graph(packages: tuple[str, ...] = SHIPPED) -> dict[str, set[str]]:
    """module -> the modules of `packages` it imports (see the module docstring)."""
    paths = {module_name(path): path for package in packages for path in python_files(package)}

    def known(name: str) -> str | None:  # the module itself, or the package holding a name
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in paths}
    for name, path in paths.items():
        for _, base, names in runtime_import_statements(path):
            # `from X import Y` imports module X.Y when there is one, else a name of X.
            targets = [f"{base}.{n}" if f"{base}.{n}" in paths else base for n in names] or [base]
            for target in filter(None, map(known, targets)):
                if target != name and not is_within(name, target):  # a parent package runs first anyway
                    graph[name].add(target)
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(circles)


def is_within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def python_files(package: str) -> list[Path]:
    return sorted(p for p in (ROOT / package).rglob("*.py") if "__pycache__" not in p.parts)


def violations() -> list[str]:
    found = []
    for package in SHIPPED:
        for path in python_files(package):
            name = module_name(path)
            for line, imported in imports_of(path):
                where = f"{path.relative_to(ROOT)}:{line} imports {imported}"
                if package == "engine" and (is_within(imported, "infill_lsp") or is_within(imported, "lab")):
                    found.append(f"{where}: the engine imports a front end or the lab")
                if package == "grammars" and is_within(imported, "engine"):
                    found.append(f"{where}: the grammars import the engine")
                if name == "engine.model" and is_within(imported, "engine.sampler"):
                    found.append(f"{where}: the model imports the sampler")
                if is_within(imported, "lab") and package != "engine":
                    found.append(f"{where}: shipped code imports the lab (it runs by its own entry, python -m lab)")
    return found


def test_import_rules_hold() -> None:
    assert violations() == []


def test_the_import_walk_sees_lazy_relative_and_string_imports(tmp_path: Path) -> None:
    source = 'def f():\n    from ..sampler import denoise\n    import importlib\n    return importlib.import_module("infill_lsp.server")\n'
    path = ROOT / "engine" / "families" / "_probe_for_test.py"
    path.write_text(source)
    try:
        found = set(imported for _, imported in imports_of(path))
    finally:
        path.unlink()
    assert {"engine.sampler", "engine.sampler.denoise", "infill_lsp.server"} <= found


def test_the_engines_types_and_serving_core_do_not_import_torch() -> None:
    code = (
        "import sys\n"
        "import engine, engine.types, engine.text, engine.context_window, engine.healing, engine.worker, engine.language\n"
        "import infill_lsp.config, infill_lsp.live.protocol, infill_lsp.text\n"
        "assert engine.SamplerSettings().max_tokens > 0\n"
        "heavy = sorted(m for m in ('torch', 'engine.api', 'engine.model', 'engine.sampler') if m in sys.modules)\n"
        "print(','.join(heavy))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"importing the types loaded: {out.stdout.strip()}"


def test_no_import_circles_among_the_shipped_modules() -> None:
    graph = import_graph()
    assert len(graph) > 80 and "engine.types" in graph["engine.batching"]  # the walk sees imports at all
    assert import_circles(graph) == []


def test_the_circle_check_finds_function_level_circles_and_skips_type_only_imports(tmp_path: Path) -> None:
    probe = ROOT / "engine" / "_circle_probe"
    probe.mkdir()
    try:
        (probe / "__init__.py").write_text("from engine._circle_probe.a import A\n")  # the package re-exports its module: no circle
        (probe / "a.py").write_text("from typing import TYPE_CHECKING\nfrom engine._circle_probe import b\nA = 1\nif TYPE_CHECKING:\n    from engine._circle_probe.c import C\n")
        (probe / "b.py").write_text("def f():\n    from . import a\n    return a\n")
        (probe / "c.py").write_text("from engine._circle_probe.a import A\nC = A\n")
        graph = import_graph(("engine",))
        assert graph["engine._circle_probe.a"] == {"engine._circle_probe.b"}
        assert graph["engine._circle_probe.c"] == {"engine._circle_probe.a"}
        assert ["engine._circle_probe.a", "engine._circle_probe.b"] in import_circles(graph)
        assert not any("engine._circle_probe.c" in circle for circle in import_circles(graph))
    finally:
        for path in sorted(probe.rglob("*"), reverse=True):
            path.rmdir() if path.is_dir() else path.unlink()
        probe.rmdir()


LAB_ONLY = re.compile(
    r"(^|/)(training|evaluation|bench_data|syntax_bench|loadtest|fixtures|baseline)(/|$)"
    r"|(^|/)(bench|bench_typing|testing|loadtest|eval_exact|fidelity|toy|lsp_client|commit_eval|tasks|progress|autoregressive|triton_attention)\.py$"
)


def build_wheel(out: Path) -> Path:
    """`pip wheel --no-deps` of a copy of the shipped tree (the build's own folders must
    not land in the checkout); no build isolation, so no network."""
    src = out / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for package in SHIPPED:
        shutil.copytree(ROOT / package, src / package, ignore=shutil.ignore_patterns("__pycache__"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", str(src), "-w", str(out / "dist")],
                           capture_output=True, text=True, timeout=600, cwd=out)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (out / "dist").glob("*.whl")
    return wheel


def test_the_built_wheel_holds_no_lab_module_and_imports_no_lab(tmp_path: Path) -> None:
    with zipfile.ZipFile(build_wheel(tmp_path)) as wheel:
        names = wheel.namelist()
        packages = {name.split("/", 1)[0] for name in names if "/" in name and not name.split("/", 1)[0].endswith((".dist-info", ".data"))}
        assert packages == set(SHIPPED), packages
        assert [name for name in names if LAB_ONLY.search(name)] == []
        unpacked = tmp_path / "unpacked"
        wheel.extractall(unpacked)
    importing_lab = []
    for path in sorted(unpacked.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            importing_lab += [f"{path.relative_to(unpacked)}:{node.lineno}" for m in modules if is_within(m, "lab")]
    assert importing_lab == []
    assert 'include = ["engine*", "infill_lsp*", "grammars*"]' in (ROOT / "pyproject.toml").read_text()


def test_the_lab_only_pattern_names_what_moved_out() -> None:
    for moved in ("engine/progress.py", "engine/autoregressive.py", "engine/quant/triton_attention.py", "lab/baseline/x.py", "engine/training/train.py"):
        assert LAB_ONLY.search(moved), moved
    assert not LAB_ONLY.search("engine/quant/triton_kernels.py") and not LAB_ONLY.search("engine/batching.py")


def test_the_sampler_driver_its_steps_and_engine_stream_stay_small() -> None:
    sampler = ast.parse((ROOT / "engine" / "sampler.py").read_text()).body
    api = ast.parse((ROOT / "engine" / "api.py").read_text()).body + ast.parse((ROOT / "engine" / "request.py").read_text()).body
    classes = [node for node in [*sampler, *api] if isinstance(node, ast.ClassDef) and node.name in ("Engine", "InfillRun", "Denoising")]
    wanted = {"denoise", "predict", "propose", "constrain", "commit", "edit", "grow", "denoise_pass", "stream", "canvas_ids", "advance", "_judge"}
    sizes = {}
    for node in [*sampler, *(member for cls in classes for member in cls.body)]:
        if isinstance(node, ast.FunctionDef) and node.name in wanted:
            assert ast.get_docstring(node), f"{node.name} has no docstring"
            sizes[node.name] = max(sizes.get(node.name, 0), node.end_lineno - node.lineno + 1)  # type: ignore[operator]
    assert set(sizes) == wanted
    assert max(sizes.values()) <= 40, sizes
