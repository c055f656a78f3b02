"""Degenerate middles are answered empty (engine/degenerate.py, checked once in
engine/answer.py Answers.make): a loop, a line written twice, the line above the cursor
again, a return after a return, a copy of a top-level import in a body."""
from __future__ import annotations

import threading

import pytest

import engine
from engine.degenerate import degenerate
from infill_lsp.empty_answer import explain_empty
from lab.evaluation.items import BENCH_FILE, DEV_FILE, load_items
from lab.fixtures.scripted_model import WritesText

FUNCTION = "import os\nimport sys\n\n\ndef load_config(path):\n"


# ------------------------------------------------------------ the rules, on text
@pytest.mark.parametrize("prefix, middle, suffix, rule", [
    ("SECRET_KEY=", "S_RE_ST_S_S_S_S_S_S_S_S", "\n", "loop"),
    ("x = ", "foo.bar." * 6 + "foo", "\n", "loop"),
    ("SECRET_KEY=", "S_RE_ST" + "_S" * 5, "\n", None),  # five copies: not yet a loop
    ("x = [", "0, " * 20, "\n", None),  # data repeats ...
    ("x = [", "0, " * 20, "\n", "limit_loop"),  # ... but not all the way to max_tokens
    ("APPS = [\n    \"django.contrib.admin\",\n    \"django.contrib.auth\",\n    ",
     "\"django.contrib.auth\",\n    \"django.contrib\",", "\n]\n", "repeated_line"),  # the line above again
    ("APPS = [\n    ", "\"admin\",\n    \"admin\",", "\n]\n", "repeated_line"),  # a line twice in the middle
    ("def f(x):\n    return\n    ", "return", "\n", "repeated_line"),
    ("def f(x):\n    y = x\n    ", "return\n    return None", "\n", "dead_return"),
    ("def f(x):\n    return x\n    ", "return None", "\n", "dead_return"),
    (FUNCTION + "    ", "import os", "\n", "top_import"),
    (FUNCTION + "    ", "import os.path.path", "\n", "top_import"),
    (FUNCTION + "    ", "from x import y\n    import sys\n", "", "top_import"),
])
def test_each_rule_names_what_it_catches(prefix, middle, suffix, rule) -> None:
    assert degenerate(prefix, middle, suffix, ran_to_limit=rule == "limit_loop") == rule


@pytest.mark.parametrize("prefix, middle, suffix", [
    ("        }\n    ", "}", "\n"),  # closers repeat
    ("f(\n    g(\n        h(x)\n    )\n", ")", "\n"),
    ("x = [\n    0,\n    ", "0,", "\n]\n"),  # data: a line with no letter
    ("    </div>\n    ", "</div>", "\n"),  # a closing tag
    ("        self.stack.pop()\n        ", "self.stack.pop()", "\n"),  # a call made for its effect, twice
    ("def f(x):\n    if x:\n        return\n    ", "return", "\n"),  # a dedent: another block's return
    ("mask = ", "0xffffffff", "\n"),  # one character repeated
    ("zeros = [", "0, 0, 0, 0, 0, 0, 0, 0, 0, 0", "]\n"),  # a unit with digits
    ("s = b'", "\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00", "'\n"),
    ("# ", "=" * 40, "\n"),
    # A line that appears elsewhere in the file (what a workspace draft is) stands: only the
    # line immediately above the cursor counts.
    ("def f(a):\n    x = compute(a)\n    return x\n\n\ndef g(a):\n    x = compute(a)\n    ", "return x", "\n"),
    (FUNCTION + "    ", "import json", "\n"),  # a local import the top does not have
    ("import os\n", "import sys", "\n"),  # a top-level import is no copy into a body
    ("", "return x", ""),  # the file's first line has no line above
    ("x = 1\n", "   \n", ""),  # whitespace is judged elsewhere (shows_something)
])
def test_what_real_code_repeats_is_not_degenerate(prefix, middle, suffix) -> None:
    assert degenerate(prefix, middle, suffix) is None


@pytest.mark.parametrize("middle", ["print(len(sorted(set(xs))))", "x = compute(a, b)", "S_RE_ST_S_S", "0"])
def test_a_middle_cut_at_max_tokens_counts_only_when_mostly_a_loop(middle) -> None:
    # `))))` or a few copies at the end is no loop; a loop to the limit is most of the text.
    assert degenerate("y = ", middle, "\n", ran_to_limit=True) is None
    assert degenerate("y = ", middle + ", 0" * 8, "\n", ran_to_limit=True) is None  # a small max_tokens cut a list
    assert degenerate("y = ", middle + ", 0" * 20, "\n", ran_to_limit=True) == "limit_loop"


def test_no_expected_middle_of_the_benchmark_items_is_degenerate() -> None:
    # The right answers of the dev and held-out lines (real code): the rules lose none.
    for item in load_items(path=DEV_FILE) + load_items(path=BENCH_FILE):
        assert degenerate(item["prefix"], item["middle"], item["suffix"]) is None, item["id"]


def test_the_explanation_names_the_repetition() -> None:
    assert "repeated itself" in explain_empty("degenerate")


# ------------------------------------------------------------ in the engine
@pytest.fixture(scope="module")
def eng():
    return engine.load()


# Where the embedded model answered a repetition before the rule: the list entry above
# written twice more, `return` after `return`, `import os.path.path` in a `with` body.
REPEATING = [
    ("INSTALLED_APPS = [\n    \"django.contrib.admin\",\n    \"django.contrib.auth\",\n    ", "\n]\n"),
    ("import os\n\n\ndef run(cmd):\n    return\n    ", "\n"),
    ("import os\nimport json\n\n\ndef read(path):\n    with open(path) as f:\n        ", "\n"),
]


def test_the_engine_never_returns_a_degenerate_middle(eng) -> None:
    results = [eng.infill(prefix, suffix, language="python") for prefix, suffix in REPEATING]
    for (prefix, suffix), result in zip(REPEATING, results):
        assert degenerate(prefix, result.middle, suffix, result.stop_reason == "max_tokens") is None, result.middle
        if result.stop_reason == "degenerate":
            assert result.middle == "" and result.tokens == 0 and result.draft == ""
    assert any(r.stop_reason == "degenerate" for r in results)


def test_a_loop_to_max_tokens_is_answered_empty(eng) -> None:
    text = "S_RE_ST" + "_S" * 80  # longer than max_tokens: the model never ends it
    scripted = engine.Engine(WritesText(eng.tokenizer, text), eng.tokenizer)
    for language in ("python", None):
        result = scripted.infill("import os\n\nSECRET_KEY=", "\n", language=language, copy_weight=0.0)
        assert (result.middle, result.stop_reason) == ("", "degenerate"), (language, result.middle, result.stop_reason)


def test_a_middle_that_says_something_is_kept(eng) -> None:
    text = "return os.path.join(path, 'config.ini')"
    scripted = engine.Engine(WritesText(eng.tokenizer, text), eng.tokenizer)
    result = scripted.infill(FUNCTION + "    ", "\n", language="python", copy_weight=0.0)
    assert result.middle == text and result.stop_reason == "end_of_middle"


def test_a_cancelled_request_keeps_its_reason(eng) -> None:
    # Front ends drop a cancelled answer by its stop reason: a loop written so far does not
    # turn it into a "degenerate" one.
    scripted = engine.Engine(WritesText(eng.tokenizer, "S_RE_ST" + "_S" * 80), eng.tokenizer)
    cancel = threading.Event()
    steps = []
    for step in scripted.stream("import os\n\nSECRET_KEY=", "\n", None, cancel, copy_weight=0.0, block_size=24):
        steps.append(step)
        cancel.set()  # after the first pass
    result = steps[-1].result
    assert result.stop_reason == "cancelled" and degenerate("SECRET_KEY=", result.middle, "\n") == "loop"
