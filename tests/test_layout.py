"""The layout's rules, checked on the source (docs/layout.md):

- the engine never imports a front end (infill_lsp) or the lab;
- the grammars never import the engine (the model included);
- the model never imports the sampler;
- no shipped module imports the lab, except the CLI (infill_lsp/cli.py), which sits above
  everything and says so when the lab is absent;
- importing the engine's types (and the serving core) does not import torch;
- the wheel's packages hold no training, evaluation, benchmark or fixture module;
- the sampler's driver, its steps and Engine.stream stay small.

Imports are read from the AST of every module, function-level ones included; a string
that names a module of a forbidden package (what `importlib.import_module` would be
handed) counts as an import too, so a detour through importlib is caught as well.
"""
from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
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
                if is_within(imported, "lab") and name != "infill_lsp.cli" and package != "engine":
                    found.append(f"{where}: shipped code imports the lab (only the CLI may)")
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
        "import engine, engine.types, engine.text, engine.window, engine.worker\n"
        "import infill_lsp.config, infill_lsp.live.protocol, infill_lsp.text\n"
        "assert engine.SamplerSettings().max_tokens > 0\n"
        "heavy = sorted(m for m in ('torch', 'engine.api', 'engine.model', 'engine.sampler') if m in sys.modules)\n"
        "print(','.join(heavy))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"importing the types loaded: {out.stdout.strip()}"


def test_the_shipped_packages_hold_no_lab_modules_or_data() -> None:
    lab_like = re.compile(r"(^|/)(training|evaluation|bench_data|syntax_bench|loadtest|fixtures)(/|$)|(^|/)(bench|bench_typing|testing|loadtest|eval_exact|fidelity|toy|lsp_client|commit_eval|tasks)\.py$")
    shipped = [str(p.relative_to(ROOT)) for package in SHIPPED for p in (ROOT / package).rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert shipped and [p for p in shipped if lab_like.search(p)] == []
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'include = ["engine*", "infill_lsp*", "grammars*"]' in pyproject and "bench_data" not in pyproject


def test_the_sampler_driver_its_steps_and_engine_stream_stay_small() -> None:
    sampler = ast.parse((ROOT / "engine" / "sampler.py").read_text()).body
    api = ast.parse((ROOT / "engine" / "api.py").read_text()).body
    classes = [node for node in [*sampler, *api] if isinstance(node, ast.ClassDef) and node.name in ("Engine", "InfillRun", "Denoising")]
    wanted = {"denoise", "predict", "propose", "constrain", "commit", "edit", "grow", "denoise_pass", "stream", "canvas_ids", "advance", "_judge"}
    sizes = {}
    for node in [*sampler, *(member for cls in classes for member in cls.body)]:
        if isinstance(node, ast.FunctionDef) and node.name in wanted:
            assert ast.get_docstring(node), f"{node.name} has no docstring"
            sizes[node.name] = max(sizes.get(node.name, 0), node.end_lineno - node.lineno + 1)  # type: ignore[operator]
    assert set(sizes) == wanted
    assert max(sizes.values()) <= 40, sizes
