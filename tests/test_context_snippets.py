"""Retrieved code in the model's context: the snippet layout (engine/workspace/snippets.py),
the `draft_context` knob, and the training recipe that teaches a model to read it
(lab/training/context_snippets.py)."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from engine.workspace.snippets import MAX_SNIPPET_CHARS, draft_context, place_lines, snippet_block, with_neighbours
from lab.training.context_snippets import MAX_CROSS_TOKENS, context_example, snippet_places
from lab.training.data import DataConfig, ExampleStream

SOURCE = """import json


class Store:
    def __init__(self, path):
        self.path = path
        self.items = {}

    def load(self):
        with open(self.path) as handle:
            self.items = json.load(handle)

    def save(self):
        with open(self.path, "w") as handle:
            json.dump(self.items, handle)

    def get(self, key, default=None):
        return self.items.get(key, default)
"""


def test_snippet_block_lays_out_each_place_then_a_blank_line():
    assert snippet_block([["a = 1", "    b = 2"], [], ["c"]]) == "a = 1\n    b = 2\n\nc\n\n"
    assert snippet_block([]) == ""


def test_with_neighbours_skips_blank_lines_as_the_index_does():
    lines = SOURCE.split("\n")
    i = lines.index("    def save(self):")
    assert with_neighbours(lines, i) == ["            self.items = json.load(handle)", "    def save(self):", '        with open(self.path, "w") as handle:']
    assert with_neighbours(lines, 0) == ["import json", "class Store:"]


def test_buffer_place_reads_the_requests_own_text_and_drops_the_cursor_mark():
    from engine.workspace.retrieve import CURSOR_MARK

    buffer = "x = 1\n\ny = 2\n" + CURSOR_MARK + "\nz = 3\n"
    at = buffer.index("y = 2")
    assert place_lines(None, ("buffer", 0, at), buffer) == ["x = 1", "y = 2", CURSOR_MARK]
    assert place_lines(None, ("buffer", 1, at), buffer) == []  # another open buffer: not shown
    assert place_lines(None, ("buffer", 0, len(buffer) + 5), buffer) == []  # a stale offset
    assert place_lines(None, ("index", 3, 4), buffer) == []  # no index


def _workspace(tmp_path: Path):
    from engine.workspace import WorkspaceContext, WorkspaceIndex

    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("def f(x):\n    y = x + 1\n    return y\n\n\ndef g(x):\n    y = x + 1\n    return y\n")
    index = WorkspaceIndex(root, cache_dir=tmp_path / "cache")
    index.refresh()
    return index, WorkspaceContext(index)


def test_draft_context_shows_the_best_drafts_where_they_stand(tmp_path):
    index, workspace = _workspace(tmp_path)
    prefix, suffix = "def h(x):\n    y = x + 1\n    ", "\n"
    drafts = workspace.drafts(prefix, suffix, "b.py")
    assert drafts and drafts[0].line == "return y"
    shown = draft_context(drafts, index, prefix, suffix)
    # The indexed place: the line with its non-blank neighbours, indentation kept.
    assert shown.startswith("    y = x + 1\n    return y\ndef g(x):\n\n")
    assert "\x00" not in shown
    long = [type(drafts[0])(text="x", line="x", places=[("buffer", 0, 0)])]
    assert draft_context(long, None, "a" * (MAX_SNIPPET_CHARS + 1) + "\n", "") == ""  # a snippet too long is not shown


def test_draft_context_knob_puts_the_snippets_before_the_prefix(tmp_path):
    import engine

    _, workspace = _workspace(tmp_path)
    eng = engine.load()
    prefix, suffix = "def h(x):\n    y = x + 1\n    ", "\n"
    off = eng.job(prefix, suffix, "python", filename="b.py", workspace=workspace)
    on = eng.job(prefix, suffix, "python", filename="b.py", workspace=workspace, draft_context=True)
    assert off.cross_file == ""
    assert on.cross_file.startswith("    y = x + 1\n    return y\n")
    ids_on, _ = eng.context_ids(on.prefix, on.suffix, on.cross_file)
    ids_off, _ = eng.context_ids(off.prefix, off.suffix, off.cross_file)
    snippet_ids = eng.tokenizer.encode(on.cross_file)
    assert ids_on[1 : 1 + len(snippet_ids)] == snippet_ids and ids_on[1 + len(snippet_ids) :] == ids_off[1:]
    no_workspace = eng.job(prefix, suffix, "python", draft_context=True)
    assert no_workspace.cross_file == ""


def test_snippet_places_mix_the_line_near_lines_and_distractors():
    lines = SOURCE.split("\n") + [f"    LIMIT_{i} = {i}" for i in range(30)]  # lines far enough to distract
    index = lines.index("            self.items = json.load(handle)")
    seen_self = seen_other = 0
    for seed in range(200):
        places = snippet_places(lines, index, random.Random(seed))
        assert len(places) == len(set(places)) <= 3  # (none: the example tries another line)
        seen_self += index in places
        seen_other += any(j != index for j in places)
    assert 40 < seen_self < 160 and seen_other > 50


def test_context_example_reads_snippets_then_the_prefix_and_writes_the_line(tok):
    cfg = DataConfig()
    file_lines = SOURCE.split("\n")
    with_line = without = 0
    for seed in range(60):
        ex = context_example(SOURCE, tok, cfg, random.Random(seed))
        assert ex is not None and ex.noisy_canvas is None
        assert ex.prefix[0] == tok.bos_id and len(ex.prefix) <= cfg.prefix_tokens
        assert len(ex.canvas) % cfg.block_size == 0 and ex.canvas[-1] == tok.eom_id
        middle = tok.decode([t for t in ex.canvas if t != tok.eom_id])
        assert middle.endswith("\n") and middle[:-1] in file_lines  # the whole line, indentation included
        start = SOURCE.index(middle)
        text = tok.decode(ex.prefix[1:])
        # The prefix ends where the line starts (the engine heals the cursor back to there),
        # and before it stand the snippets: whole lines of the file, a blank line after each.
        assert text.endswith(SOURCE[:start])
        shown = text[: len(text) - start]
        assert shown.endswith("\n\n")
        for snippet in shown[:-2].split("\n\n"):
            assert snippet and all(line in file_lines for line in snippet.split("\n"))
        with_line += middle in shown
        without += middle not in shown
    assert with_line > 10 and without > 10  # the line is sometimes shown, sometimes not


def test_context_example_caps_the_snippets_tokens(tok):
    source = "\n".join(f"value_{i} = compute_something_long(argument_{i}, other_{i}, more_{i})" for i in range(200)) + "\n"
    cfg = DataConfig()
    for seed in range(20):
        ex = context_example(source, tok, cfg, random.Random(seed))
        assert ex is not None and len(ex.prefix) == cfg.prefix_tokens  # a long file fills the window
        middle = tok.decode([t for t in ex.canvas if t != tok.eom_id])
        start = source.index(middle)
        tail = tok.encode(source[max(0, start - cfg.prefix_tokens * cfg.chars_per_token_budget) : start])
        # BOS, at most MAX_CROSS_TOKENS of snippets, then the prefix's own tail.
        kept = cfg.prefix_tokens - 1 - MAX_CROSS_TOKENS
        assert ex.prefix[-kept:] == tail[-kept:]


def test_example_stream_mixes_in_context_examples(tok):
    docs = [{"text": SOURCE, "language": "python"}]
    stream = ExampleStream(docs, tok, DataConfig(), seed=3, context_fraction=1.0)
    plain = ExampleStream(docs, tok, DataConfig(), seed=3)
    lines = [x for x in SOURCE.split("\n") if x.strip()]
    read = [tok.decode(stream.example(0).prefix[1:]) for _ in range(20)]
    # A context example's prefix starts with a snippet: a whole line of the file, then more lines.
    assert sum(any(text.startswith(line + "\n") for line in lines) for text in read) >= 15
    assert plain.context_fraction == 0.0


def test_batch_lines_carry_the_knob_and_reject_a_wrong_value():
    from infill_lsp.batch import BadLine, parse_line

    _, fields = parse_line('{"id": "a", "prefix": "x = ", "suffix": "", "draft_context": true}')
    assert fields["draft_context"] is True
    with pytest.raises(BadLine, match="draft_context"):
        parse_line('{"id": "a", "prefix": "x = ", "suffix": "", "draft_context": "yes"}')


def test_context_eval_pairs_each_example_with_and_without_its_snippets(tmp_path, tok):
    import json

    import engine
    from engine.modeldir import load_infill_model, read_config
    from lab.training import context_eval

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "valid.jsonl").write_text(json.dumps({"path": "a.py", "language": "python", "text": SOURCE}) + "\n")
    pairs = context_eval.examples(corpus, tok, 6, {"python"}, "held")
    assert len(pairs) == 6
    for shown, hidden in pairs:
        assert shown.canvas == hidden.canvas and shown.suffix == hidden.suffix
        assert len(shown.prefix) > len(hidden.prefix) and shown.prefix[len(shown.prefix) - len(hidden.prefix) + 1 :] == hidden.prefix[1:]
        line = tok.decode([t for t in shown.canvas if t != tok.eom_id]).rstrip("\n")
        assert line in tok.decode(shown.prefix[1 : len(shown.prefix) - len(hidden.prefix) + 1])  # held: the line is shown
    model = load_infill_model(engine.DEFAULT_MODEL_DIR, read_config(engine.DEFAULT_MODEL_DIR)).float().eval()
    figures = context_eval.measure(model, pairs, tok)
    for name in ("with", "without"):
        assert figures[name]["logp"] < 0 and 0 <= figures[name]["right"] <= 1 and 0 <= figures[name]["next_right"] <= 1
    assert figures["with"]["logp"] != figures["without"]["logp"]


def test_draft_context_is_cut_to_the_trained_share_of_the_window(tok):
    from engine.workspace.retrieve import Draft
    from engine.workspace.snippets import SNIPPET_TOKENS

    body = "\n".join(f"value_{i} = compute(argument_{i}, other_{i})" for i in range(40)) + "\n"
    drafts = [Draft(text="x", line="x", places=[("buffer", 0, body.index(f"value_{i} ="))]) for i in (3, 10, 20)]
    full = draft_context(drafts, None, body, "")
    cut = draft_context(drafts, None, body, "", tok)
    assert len(tok.encode(full)) > SNIPPET_TOKENS
    assert full.startswith(cut) and SNIPPET_TOKENS - 2 <= len(tok.encode(cut)) <= SNIPPET_TOKENS
