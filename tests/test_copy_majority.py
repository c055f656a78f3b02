"""The copy rule's majorities (engine/runs.py NgramTable, engine/copying.py CopyIndex) and the workspace as
its datastore (engine/workspace/ngrams.py): a run of tokens whose continuations agree
proposes the agreed token, the workspace's table first, then the request's own text's,
then the latest occurrence as before."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest
import torch

import engine
import engine.sampler as sampler_module
import engine.workspace.ngrams as ngrams_module
from engine.copying import CopyIndex, copy_mix
from engine.runs import MIN_SEEN, TOKEN_BITS, NgramTable, run_key
from engine.sampler import Denoising, Surroundings
from engine.types import SamplerSettings
from engine.workspace import WorkspaceContext, WorkspaceIndex
from engine.workspace.ngrams import WorkspaceNgrams

SPECIAL = frozenset({0})


def test_a_run_whose_continuations_agree_proposes_the_agreed_token() -> None:
    table = NgramTable([[5, 6, 7, 5, 6, 7, 5, 6, 7, 5, 6, 9]], SPECIAL)
    assert table.guess([5, 6]) == 7  # 3 of 4 after (5, 6): 75% >= MIN_SHARE
    assert table.guess([1, 2, 3]) is None  # never seen


def test_no_guess_where_the_continuations_disagree_or_the_run_was_seen_once() -> None:
    split = NgramTable([[5, 6, 7, 5, 6, 8, 5, 6, 9]], SPECIAL)
    assert split.guess([5, 6]) is None  # a third each
    once = NgramTable([[1, 2, 3, 4, 5]], SPECIAL)
    assert MIN_SEEN == 2 and once.guess([1, 2]) is None


def test_the_longest_run_seen_decides() -> None:
    table = NgramTable([[9, 1, 2, 4, 9, 1, 2, 4, 8, 1, 2, 3, 8, 1, 2, 3, 7, 1, 2, 3]], SPECIAL)
    assert table.guess([9, 1, 2]) == 4 and table.guess([8, 1, 2]) == 3
    # (7, 1, 2) was seen once: too thin, and the shorter run is not asked instead
    assert table.guess([7, 1, 2]) is None
    # (6, 1, 2) never: (1, 2) is followed by 3 three times in five, below MIN_SHARE
    assert table.guess([6, 1, 2]) is None


def test_runs_do_not_cross_files_and_special_tokens_are_never_proposed() -> None:
    table = NgramTable([[1, 2, 0, 1, 2, 0], [3, 4]], SPECIAL)
    assert table.guess([1, 2]) is None  # only the special token 0 followed
    assert table.guess([2, 3]) is None  # the files are not one stream


def test_large_vocabularies_are_keyed_by_hash() -> None:
    big = (1 << TOKEN_BITS) + 5
    table = NgramTable([[big, 7, 42, big, 7, 42]], SPECIAL)
    assert table.guess([big, 7]) == 42
    assert run_key([big, 7]) != run_key([5, 7])


def test_the_request_s_own_majority_beats_its_latest_occurrence() -> None:
    source = [5, 6, 7, 1, 5, 6, 7, 1, 5, 6, 7, 1, 5, 6, 8]
    index = CopyIndex(source, SPECIAL)
    assert index.guess([5, 6]) == 7  # the latest occurrence says 8, the majority 7
    assert CopyIndex([5, 6, 8], SPECIAL).guess([5, 6]) == 8  # one occurrence: the latest, as before


def test_the_workspace_table_goes_first() -> None:
    workspace = NgramTable([[5, 6, 9] * 3], SPECIAL)
    index = CopyIndex([5, 6, 7, 5, 6, 7], SPECIAL, workspace=workspace)
    assert index.guess([5, 6]) == 9
    assert index.guess([6, 7]) == 5  # the workspace has no such run: the request's own text


def test_copy_mix_mixes_the_workspace_s_guess(eng) -> None:
    tok = eng.tokenizer
    name = tok.encode(" lookup_widget_registry")
    left = tok.encode("self.registry.")
    workspace = NgramTable([left + name] * 3, tok.special_ids)
    settings = SamplerSettings(copy_weight=0.3)
    around = Surroundings("self.registry.", "", None, left, (), workspace)
    run = Denoising.begin(tok, settings, around, 0.0, 0)
    probs = torch.full((run.canvas.size, tok.vocab_size), 1.0 / tok.vocab_size)
    copy_mix(probs, run.canvas, run.copy_index, settings.copy_weight)
    assert int(probs[0].argmax()) == name[0]
    assert probs[0, name[0]] == pytest.approx(0.3 + 0.7 / tok.vocab_size)


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).write_text(text)


def test_the_workspace_table_is_rebuilt_from_changed_files_only(tmp_path: Path) -> None:
    _write(tmp_path, {"a.py": "aaa bbb ccc\n", "b.py": "ddd eee fff\n"})
    encoded: list[str] = []

    def encode(text: str) -> list[int]:
        encoded.append(text)
        return [ord(c) for c in text]

    holder = WorkspaceNgrams()
    files = [(tmp_path / "a.py", (1, 12)), (tmp_path / "b.py", (1, 12))]
    first = holder.get(1, lambda: files, encode, SPECIAL, wait=True)
    assert first is not None and first.tokens == 24 and len(encoded) == 2
    assert holder.get(1, lambda: [], encode, SPECIAL, wait=True) is first  # the same generation: not even listed
    assert holder.get(2, lambda: files, encode, SPECIAL, wait=True) is first  # a new one, the same files: nothing read
    (tmp_path / "b.py").write_text("ddd eee ggg\n")
    changed = holder.get(3, lambda: [files[0], (tmp_path / "b.py", (2, 12))], encode, SPECIAL, wait=True)
    assert changed is not first and encoded[2:] == ["ddd eee ggg\n"]


def test_binary_large_and_unreadable_files_are_left_out(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "bin.py").write_bytes(b"\0\1\2 binary")
    monkeypatch.setattr(ngrams_module, "MAX_FILE_BYTES", 64)
    _write(tmp_path, {"big.py": "x = 1\n" * 20, "ok.py": "y = 2\n"})
    files = [(tmp_path / name, (1, 1)) for name in ("bin.py", "big.py", "gone.py", "ok.py")]
    table = WorkspaceNgrams().get(1, lambda: files, lambda text: [ord(c) for c in text], SPECIAL, wait=True)
    assert table is not None and table.tokens == len("y = 2\n")


def test_the_token_budget_leaves_the_rest_of_a_large_workspace_out(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(ngrams_module, "MAX_TOKENS", 10)
    _write(tmp_path, {"a.py": "1234567\n", "b.py": "abcdefg\n"})
    files = [(tmp_path / "a.py", (1, 1)), (tmp_path / "b.py", (1, 1))]
    table = WorkspaceNgrams().get(1, lambda: files, lambda text: [ord(c) for c in text], SPECIAL, wait=True)
    assert table is not None and table.tokens == 8


def test_an_editor_s_request_does_not_wait_for_the_build(tmp_path: Path) -> None:
    _write(tmp_path, {"a.py": "aaa bbb\n"})
    release = threading.Event()

    def slow_encode(text: str) -> list[int]:
        release.wait()  # the build is held until the request has been answered
        return [ord(c) for c in text]

    holder = WorkspaceNgrams()
    files = [(tmp_path / "a.py", (1, 8))]
    assert holder.get(1, lambda: files, slow_encode, SPECIAL) is None  # building in a thread meanwhile
    release.set()
    assert holder.building is not None
    holder.building.join()
    assert holder.table is not None and holder.get(1, lambda: files, slow_encode, SPECIAL) is holder.table


@pytest.fixture(scope="module")
def eng():
    return engine.load()


def test_a_request_with_a_workspace_copies_from_it(eng, tmp_path: Path, monkeypatch) -> None:
    _write(tmp_path, {"widgets.py": "".join(f"w{i} = self.registry.lookup_widget_registry({i})\n" for i in range(4))})
    index = WorkspaceIndex(tmp_path, cache_dir=tmp_path / ".cache")
    index.refresh()
    made: list[CopyIndex] = []

    class Recording(CopyIndex):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(sampler_module, "CopyIndex", Recording)
    workspace = WorkspaceContext(index, wait_for_tables=True)
    eng.infill("def f(self):\n    x = self.registry.", "\n", "python", workspace=workspace, workspace_drafts=False)
    tok = eng.tokenizer
    assert made and len(made[0].tables) == 2  # the workspace's table, then the request's own
    table = made[0].tables[0]
    assert table is index.copy_tables[tok].table
    assert tok.piece(table.guess(tok.encode("    x = self.registry."))) == "lookup"
    made.clear()
    eng.infill("def f(self):\n    x = self.registry.", "\n", "python", workspace=workspace, workspace_drafts=False, workspace_copy=False)
    assert made and len(made[0].tables) == 1  # turned off: the request's own text only
    index.close()


def test_the_table_follows_the_index_when_a_file_changes(eng, tmp_path: Path) -> None:
    tok = eng.tokenizer
    path = tmp_path / "calls.py"
    path.write_text("a = make_widget(1)\nb = make_widget(2)\n")
    index = WorkspaceIndex(tmp_path, cache_dir=tmp_path / ".cache")
    index.refresh()
    context = WorkspaceContext(index, wait_for_tables=True)
    first = context.ngrams(tok)
    assert first is not None and context.ngrams(tok) is first  # no change: the same table
    left = tok.encode("z = make_")  # a 4-token run seen nowhere: decided by (" =", " make", "_")
    assert tok.piece(first.guess(left)) == "widget"
    path.write_text("a = make_gadget(1)\nb = make_gadget(2)\nc = make_gadget(3)\n")
    generation = index.generation
    index.update_file(path)
    assert index.generation > generation
    again = context.ngrams(tok)
    gadget = tok.encode("a = make_gadget(1)")[4]  # the token after "a", " =", " make", "_"
    assert again is not first and again.guess(left) == gadget
    index.close()


def test_an_editor_s_table_is_rebuilt_at_most_every_so_often(tmp_path: Path, monkeypatch) -> None:
    _write(tmp_path, {"a.py": "aaa bbb\n"})
    holder = WorkspaceNgrams()
    encode = lambda text: [ord(c) for c in text]  # noqa: E731
    monkeypatch.setattr(ngrams_module, "REBUILD_AFTER_S", 1e9)  # "just built", however slow the machine
    first = holder.get(1, lambda: [(tmp_path / "a.py", (1, 8))], encode, SPECIAL, wait=True)
    (tmp_path / "a.py").write_text("ccc ddd\n")
    files = [(tmp_path / "a.py", (2, 8))]
    assert holder.get(2, lambda: files, encode, SPECIAL) is first  # just built: the stale table, no new build
    assert holder.building is None
    monkeypatch.setattr(ngrams_module, "REBUILD_AFTER_S", 0.0)
    holder.get(2, lambda: files, encode, SPECIAL)
    assert holder.building is not None
    holder.building.join()
    assert holder.table is not first and holder.generation == 2


def test_a_failed_background_build_keeps_the_table_and_the_server(tmp_path: Path, caplog, monkeypatch) -> None:
    _write(tmp_path, {"a.py": "aaa bbb\n"})
    holder = WorkspaceNgrams()
    encode = lambda text: [ord(c) for c in text]  # noqa: E731
    first = holder.get(1, lambda: [(tmp_path / "a.py", (1, 8))], encode, SPECIAL, wait=True)
    monkeypatch.setattr(ngrams_module, "REBUILD_AFTER_S", 0.0)  # any table is old enough to rebuild

    def closed_index() -> list:
        raise RuntimeError("the index was closed")

    assert holder.get(2, closed_index, encode, SPECIAL) is first
    assert holder.building is not None
    holder.building.join()
    assert holder.table is first and "not rebuilt" in caplog.text


def test_a_one_shot_request_builds_no_table(tmp_path: Path, monkeypatch) -> None:
    import io

    from infill_lsp.cli import open_workspace

    monkeypatch.setenv("INFILL_CACHE_DIR", str(tmp_path / ".cache"))  # the index's database stays in the test's folder
    _write(tmp_path, {"a.py": "aaa bbb\n"})
    context = open_workspace(tmp_path, io.StringIO())
    assert context.ngrams(engine.load().tokenizer) is None
    assert context.index is not None and not context.index.copy_tables  # nothing started beside it either
    context.index.close()
