"""The `infill` command as a user meets it: completions, the batch contract, clear errors."""
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

ENV_THREADS = {"OMP_NUM_THREADS": "1"}


def infill(*args, stdin=None, timeout=180):
    import os

    env = {**os.environ, **ENV_THREADS}
    return subprocess.run([sys.executable, "-m", "infill_lsp.cli", *map(str, args)], input=stdin, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture()
def sample(tmp_path):
    path = tmp_path / "sample.py"
    path.write_text("def add(a, b):\n    return a + b\n\n\nprint(add(1, 2))\n")
    return path


def test_complete_prints_a_middle_and_json_figures(sample, tiny_model_dir):
    out = infill("complete", sample, "--line", 2, "--column", 5, "--model", tiny_model_dir, "--max-tokens", 8, "--no-constrained", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert {"middle", "tokens", "forwards", "ms", "tokens_per_forward", "source"} <= set(data)
    assert 0 <= data["tokens"] <= 8 and data["forwards"] >= 1
    # Where the middle came from: the model's, or a line of the file's folder named by its place.
    assert data["source"] == "model" and "origin" not in data or data["source"] == "workspace" and data["origin"]


def test_complete_with_the_embedded_model(sample):
    out = infill("complete", sample, "--line", 2, "--column", 12)
    assert out.returncode == 0, out.stderr
    assert "tokens in" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize(
    "make, args, message",
    [
        (lambda p: None, ["--line", 1, "--column", 1], "no such file"),
        (lambda p: p.write_bytes(b"\xff\xfe\x00\x01binary"), ["--line", 1, "--column", 1], "binary"),
        (lambda p: p.write_bytes(b"caf\xe9 latin-1\n"), ["--line", 1, "--column", 1], "not valid UTF-8"),
        (lambda p: p.write_text("x = 1\n"), ["--line", 9, "--column", 1], "outside the file"),
        (lambda p: p.write_text("x = 1\n"), ["--line", 1, "--column", 99], "outside line 1"),
        (lambda p: p.write_text("x" * 9_000_000), ["--line", 1, "--column", 1], "MB"),
        (lambda p: p.write_text(""), ["--line", 1, "--column", 1], "empty"),
    ],
)
def test_user_mistakes_get_one_clear_line(tmp_path, tiny_model_dir, make, args, message):
    path = tmp_path / "input.py"
    make(path)
    out = infill("complete", path, *args, "--model", tiny_model_dir)
    assert out.returncode == 2
    assert message in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_complete_refuses_an_unknown_language_and_says_which_one_it_used(tmp_path, sample, tiny_model_dir):
    """Issue 26 (4): `--language cobol` ran unconstrained without a word. (8): the language
    is --language, else the file's extension, else detected (a script without one)."""
    out = infill("complete", sample, "--line", 2, "--column", 5, "--model", tiny_model_dir, "--language", "cobol")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "unknown language 'cobol'" in out.stderr and all(n in out.stderr for n in ("go", "python", "rust", "tsx"))
    script = tmp_path / "tool"  # no extension: the shebang tells
    script.write_text("#!/usr/bin/env python3\nimport sys\n\n\ndef main():\n    return 0\n\n\nsys.exit(main())\n")
    for path, language, source in ((sample, "python", "filename"), (script, "python", "detected")):
        out = infill("complete", path, "--line", 6 if path == script else 2, "--column", 5, "--model", tiny_model_dir,
                     "--max-tokens", 2, "--json")
        assert out.returncode == 0, out.stderr
        data = json.loads(out.stdout)
        assert (data["language"], data["language_source"]) == (language, source)
    out = infill("complete", sample, "--line", 2, "--column", 5, "--model", tiny_model_dir, "--max-tokens", 2,
                 "--language", "rust")
    assert out.returncode == 0 and "language: rust (--language)" in out.stderr, out.stderr


def test_a_one_megabyte_file_completes_within_its_window(tmp_path, tiny_model_dir):
    path = tmp_path / "big.py"
    body = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(40_000))
    path.write_text(body[:1_000_000])
    out = infill("complete", path, "--line", 20_000, "--column", 5, "--model", tiny_model_dir, "--max-tokens", 4, "--no-constrained", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["ms"] < 10_000


def test_missing_and_corrupt_model_directories(tmp_path, sample, tiny_model_dir):
    out = infill("complete", sample, "--line", 1, "--column", 1, "--model", tmp_path / "nope")
    assert out.returncode == 2 and "does not exist" in out.stderr
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    for f in tiny_model_dir.iterdir():
        (corrupt / f.name).write_bytes(f.read_bytes())
    weights = corrupt / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    out = infill("complete", sample, "--line", 1, "--column", 1, "--model", corrupt)
    assert out.returncode == 2 and "corrupt or truncated" in out.stderr and "Traceback" not in out.stderr
    (corrupt / "config.json").write_text("{not json")
    out = infill("complete", sample, "--line", 1, "--column", 1, "--model", corrupt)
    assert out.returncode == 2 and "not valid JSON" in out.stderr


def test_batch_contract_keeps_order_and_reports_bad_lines(tiny_model_dir):
    lines = [
        json.dumps({"id": "a", "prefix": "def f(x):\n    return ", "suffix": "\n", "language": "python", "max_tokens": 6, "constrained": False}),
        "this is not json",
        json.dumps({"id": "b", "prefix": "x = "}),
        json.dumps({"id": "c", "prefix": "", "suffix": "", "max_tokens": 3}),
        json.dumps({"id": "d", "prefix": "a", "suffix": "b", "max_tokens": "many"}),
        json.dumps({"id": "e", "prefix": "é🎉", "suffix": "\r\n", "max_tokens": 4, "constrained": False}),
    ]
    out = infill("batch", "--model", tiny_model_dir, stdin="\n".join(lines) + "\n")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(l) for l in out.stdout.splitlines()]
    assert [r["id"] for r in rows] == ["a", None, "b", "c", "d", "e"]
    assert "empty" in rows[3]["error"]
    for r in (rows[0], rows[5]):
        assert isinstance(r["middle"], str) and isinstance(r["tokens"], int) and isinstance(r["forwards"], int) and isinstance(r["ms"], float)
    assert rows[0]["tokens"] <= 6
    assert "invalid JSON" in rows[1]["error"]
    assert "suffix" in rows[2]["error"]
    assert "max_tokens" in rows[4]["error"]


def test_batch_lines_are_denoised_together_with_their_solo_middles(tiny_model_dir):
    """More lines than the batch holds, interleaved with a bad one: every middle is the one
    `Engine.infill` gives the same request alone, in input order."""
    import engine
    from infill_lsp.batch import run_batch

    prompts = [(f"def f{i}(x):\n    return ", "\n", {"max_tokens": 3 + i % 5}) for i in range(7)]
    lines = [json.dumps({"id": str(i), "prefix": p, "suffix": s, "language": "python", **cfg}) for i, (p, s, cfg) in enumerate(prompts)]
    lines.insert(3, "{broken")
    stdout = io.StringIO()
    assert run_batch(io.StringIO("\n".join(lines) + "\n"), stdout, model_dir=tiny_model_dir, max_batch=2) == 0
    rows = [json.loads(l) for l in stdout.getvalue().splitlines()]
    assert [r["id"] for r in rows] == ["0", "1", "2", None, "3", "4", "5", "6"]
    eng = engine.load(tiny_model_dir)
    solo = [eng.infill(p, s, language="python", **cfg).middle for p, s, cfg in prompts]
    assert [r["middle"] for r in rows if r["id"] is not None] == solo


COMMANDS = ("complete", "batch", "index", "bench", "lsp", "serve", "quantize", "models", "corpus", "tokenizer", "train", "eval", "next-edit-batch")


def listed_commands(help_text: str) -> list[str]:
    """The subcommands argparse lists under COMMAND: the first word of each line indented
    by exactly four spaces after the `{a,b,...}` line, not words found anywhere in the text."""
    import re

    section = help_text.split("COMMAND", 2)[-1]
    return re.findall(r"^ {4}(\S+)", section, flags=re.M)


def test_help_lists_every_command():
    out = infill("--help")
    assert out.returncode == 0
    assert sorted(listed_commands(out.stdout)) == sorted(COMMANDS)
    # The parser of the check itself: a command missing from the list is noticed even
    # though its name occurs in other commands' help lines ("eval" in "evaluate").
    assert "eval" not in listed_commands(out.stdout.replace("\n    eval ", "\n    (gone) "))


def test_no_command_is_a_usage_error():
    out = infill()
    assert out.returncode == 2 and "usage: infill" in out.stderr and out.stdout == ""


def test_an_empty_answer_is_explained_in_words(sample, tiny_model_dir):
    # max_tokens 0: the engine writes nothing, and says why in a sentence, not only a code.
    out = infill("complete", sample, "--line", 2, "--column", 12, "--model", tiny_model_dir, "--max-tokens", 0, "--no-constrained")
    assert out.returncode == 0, out.stderr
    assert "no suggestion: --max-tokens is 0" in out.stderr
    from infill_lsp.cli import explain_empty

    assert "unparseable" in explain_empty("rejected") and "shows nothing" in explain_empty("rejected")


def test_batch_answers_every_line_and_checks_language_and_max_tokens(tiny_model_dir):
    lines = [
        json.dumps({"id": "a", "prefix": "x = ", "suffix": "\n", "max_tokens": 2, "constrained": False}),
        "",
        "   ",
        json.dumps({"id": "cobol", "prefix": "x = ", "suffix": "\n", "language": "cobol"}),
        json.dumps({"id": "huge", "prefix": "x = ", "suffix": "\n", "max_tokens": 10**9}),
        json.dumps({"id": "z", "prefix": "x = ", "suffix": "\n", "language": "python", "max_tokens": 2, "constrained": False}),
    ]
    out = infill("batch", "--model", tiny_model_dir, stdin="\n".join(lines) + "\n")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(l) for l in out.stdout.splitlines()]
    assert [r["id"] for r in rows] == ["a", None, None, "cobol", "huge", "z"]
    assert "empty line" in rows[1]["error"] and "empty line" in rows[2]["error"]
    assert "unknown language 'cobol'" in rows[3]["error"] and "python" in rows[3]["error"]
    assert "max_tokens" in rows[4]["error"] and "2048" in rows[4]["error"]
    assert "middle" in rows[0] and "middle" in rows[5]
    bad = infill("batch", "--model", tiny_model_dir, "--language", "cobol", stdin="")
    assert bad.returncode == 2 and "unknown language" in bad.stderr


def test_progress_lines_end_in_newlines_off_a_terminal():
    import io

    from lab.progress import report_progress

    stream = io.StringIO()
    for i in range(1, 6):
        report_progress("bench", i, 5, stream)
    assert stream.getvalue() == "".join(f"bench {i}/5\n" for i in range(1, 6))

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty = Terminal()
    for i in range(1, 3):
        report_progress("bench", i, 2, tty)
    assert tty.getvalue() == "\rbench 1/2\rbench 2/2\n"


def test_the_readme_python_example_runs():
    import re

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    code = re.search(r"### Python\n\n```python\n(.*?)```", readme, flags=re.S).group(1)
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)  # NameError before: prefix/suffix undefined
    assert isinstance(namespace["result"].middle, str)


@pytest.mark.parametrize("command", ["train", "eval", "bench", "corpus", "tokenizer"])
def test_lab_commands_point_to_the_labs_own_entry(command, capsys):
    """`infill` imports no lab code: the lab's commands say, in one line, where they run."""
    from infill_lsp import cli

    assert cli.main([command, "--help"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"python -m lab {command} ..." in err and "source checkout" in err


def test_lab_commands_run_from_the_checkout_by_their_own_entry(tmp_path):
    """`python -m lab COMMAND` from the checkout root, nothing on PYTHONPATH."""
    import os

    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, **ENV_THREADS, "PYTHONPATH": ""}
    out = subprocess.run([sys.executable, "-m", "lab", "train", "--help"], capture_output=True, text=True, timeout=120, env=env, cwd=root)
    assert out.returncode == 0, out.stderr
    assert "--time-budget" in out.stdout and "python -m lab train" in out.stdout
    unknown = subprocess.run([sys.executable, "-m", "lab", "trian"], capture_output=True, text=True, timeout=120, env=env, cwd=root)
    assert unknown.returncode == 2 and "unknown command 'trian'" in unknown.stderr and "Traceback" not in unknown.stderr


def test_the_figures_line_says_where_a_workspace_line_came_from():
    from engine.types import InfillResult
    from infill_lsp.cli import _source_note

    assert _source_note(InfillResult("x", 1, 1, 1.0, "end_of_middle")) == ""
    assert _source_note(InfillResult("x", 1, 1, 1.0, "end_of_middle", draft="workspace", draft_origin="pkg/util.py:120")) == ", from pkg/util.py:120"
    assert _source_note(InfillResult("x", 1, 1, 1.0, "end_of_middle", draft="workspace")) == ", from the workspace"
