"""Task extraction, the commit-check self-evaluation, and the benchmark's bookkeeping."""
from __future__ import annotations

from collections import Counter

import grammars
from lab.syntax_bench import bench, tasks
from lab.syntax_bench.commit_eval import evaluate, pieces_of


def test_bench_sources_yield_all_three_kinds_for_python_and_javascript():
    found = tasks.bench_tasks()
    kinds = Counter((t.language, t.kind) for t in found)
    for language in ("python", "javascript"):
        for kind in tasks.KINDS:
            assert kinds[(language, kind)] >= 10, (language, kind, kinds)
    for task in found[:50]:
        # Splicing the original middle back gives the original, clean file.
        assert bench.splice_parses(task, task.middle)
        assert task.middle.strip()


def test_task_kinds_cut_the_right_text():
    source = "def f(x):\n    if x > 1:\n        return g(x, 2)\n    return 0\n"
    cut = {(t.kind, t.middle) for t in tasks.tasks_from_source(source, "python")}
    assert ("condition", "x > 1") in cut
    assert ("arguments", "x, 2") in cut
    assert ("block", "return g(x, 2)") in cut
    js = "function f(x) {\n  while (x < 3) {\n    x = g(x);\n  }\n  return x;\n}\n"
    cut = {(t.kind, t.middle) for t in tasks.tasks_from_source(js, "javascript")}
    assert ("condition", "x < 3") in cut and ("arguments", "x") in cut
    assert ("block", "\n    x = g(x);\n  ") in cut


def test_true_canvases_are_never_vetoed_on_a_sample():
    sample = tasks.bench_tasks()[::8]
    result = evaluate(sample, seed=3)
    assert result.canvases >= 150
    assert result.false_vetoes <= max(1, result.canvases // 200), result.examples
    assert result.caught >= result.corrupted // 4  # the check does catch corruption


def test_pieces_cover_the_text():
    text = "if x:\n    return f(a, 'b')  # c\n"
    assert "".join(pieces_of(text)) == text


class _ReplayEngine:
    """Answers with a fixed middle per task: the metric code is what is under test."""

    def __init__(self, answers):
        self.answers = answers

    def infill(self, prefix, suffix, language=None, constrained=True, **_):
        class Out:
            middle = self.answers[(prefix, suffix)]
            ms = 10.0
            vetoed = 0

        return Out()


def test_setting_figures_count_validity_and_exact_match():
    chosen = [t for t in tasks.bench_tasks() if t.kind == "arguments"][:4]
    answers = {(t.prefix, t.suffix): t.middle for t in chosen[:2]}
    answers.update({(t.prefix, t.suffix): t.middle + ")]" for t in chosen[2:]})
    figures = bench.run_setting(_ReplayEngine(answers), chosen, constrained=False).figures()
    assert figures["tasks"] == 4
    assert figures["exact_match_rate"] == 0.5
    assert figures["parse_valid_rate"] == 0.5
    assert figures["ms_per_infill"] == 10.0
    table = bench.format_table(figures, figures)
    assert "parse-valid" in table and "exact match" in table and "constraint ms" in table
