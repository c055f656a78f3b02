"""The example answers in docs/http-api.md and docs/live-protocol.md are this build's
(issue 35, item 7): each marked example is sent as written to a real `infill serve` with the
embedded model (lab/docs_examples.py), and any answer that differs from the docs fails
here with its diff. `python -m lab.docs_examples --write` rewrites them after a change that
moves the answers (a retrained model, a sampler change)."""
from __future__ import annotations

from typing import Iterator

import pytest

from lab import docs_examples as de

EXAMPLES = {"http-api.md": ["openai", "openai-stream", "http-errors", "ollama", "llamacpp"],
            "live-protocol.md": ["live"]}


@pytest.fixture(scope="module")
def serve() -> Iterator[de.ServeInfill]:
    with de.ServeInfill() as server:
        yield server


def test_every_documented_example_is_marked_and_parsed() -> None:
    for doc in de.DOCS:
        examples = de.find_examples(doc)
        assert [example.name for example in examples] == EXAMPLES[doc.name], "an example lost its marker"
        for example in examples:
            if not example.name.startswith("live"):
                assert de.parse_curl(example.request), example.name


def test_the_documented_answers_are_what_this_build_returns(serve: de.ServeInfill) -> None:
    problems = de.check_docs(serve.url, serve.token)
    assert not problems, ("the docs' example answers drifted; run `python -m lab.docs_examples --write` "
                          "and review the diff:\n\n" + "\n\n".join(problems))


def test_the_check_fails_on_an_answer_this_build_does_not_give(serve: de.ServeInfill) -> None:
    doc = de.DOCS[0]
    text = doc.read_text(encoding="utf-8")
    (openai,) = [example for example in de.find_examples(doc, text) if example.name == "openai"]
    drifted = openai.answer.replace('"finish_reason": "stop"', '"finish_reason": "length"')
    assert drifted != openai.answer
    start, end = openai.answer_span
    problems = de.check_docs(serve.url, serve.token, [doc], {doc: text[:start] + drifted + text[end:]})
    assert len(problems) == 1 and "openai (documented)" in problems[0] and '"length"' in problems[0]


def test_a_stream_may_merge_documented_steps_but_not_change_them() -> None:
    documented = "".join(f'data: {{"infill":{{"step":{n},"text":"{"ab"[:n]}"}}}}\n\n' for n in (1, 2)) + \
        'data: {"choices":[{"text":"ab"}]}\n\ndata: [DONE]\n'
    merged = documented.split("\n\n", 1)[1]  # the first step merged into the second
    assert de.agrees(documented, documented) and de.agrees(documented, merged)
    assert not de.agrees(documented, merged.replace('"text":"ab"}]', '"text":"a"}]'))
    assert not de.agrees(documented, merged.replace('"step":2,"text":"ab"', '"step":2,"text":"b"'))


def test_a_live_transcript_may_merge_documented_steps_the_way_the_outbox_does() -> None:
    # The documented transcript of docs/live-protocol.md, and what a slow reader got in CI:
    # its two steps in one frame (the outbox merges an unsent step with the next).
    documented = de.find_examples(de.DOCS[1])[0].answer
    steps = [line for line in documented.split("\n") if '"type":"step"' in line]
    assert len(steps) >= 2, "the live example has one step: nothing to merge"
    merged_line = de._merged_live_steps(steps[:2])
    assert merged_line is not None and merged_line.endswith(",…}")  # the `coalesced` count
    merged = documented.replace(steps[0] + "\n" + steps[1], merged_line)
    assert merged != documented and de.agrees(documented, merged)
    # A merge that is not of the documented steps is refused: a changed canvas, a lost change.
    assert not de.agrees(documented, merged.replace(merged_line, merged_line.replace('"canvas":[', '"canvas":["x",')))
    first_change = merged_line.index('{"position"')
    lost = merged_line[:first_change] + merged_line[merged_line.index("},", first_change) + 2:]
    assert not de.agrees(documented, merged.replace(merged_line, lost))


def test_answers_are_laid_out_within_the_width() -> None:
    answer = {"a": "x" * 40, "b": {"c": 1, "d": "y" * 70}, "e": 3, "f": 4}
    spec = {"a": de.SHOW, "b": {"c": de.SHOW, "d": de.SHOW}, "e": de.VARIES}
    assert de.layout(answer, spec) == ('{"a": "' + "x" * 40 + '",\n'
                                       ' "b": {"c": 1, "d": "' + "y" * 70 + '"},\n'
                                       ' "e": …, …}')  # a value that varies, then the keys left out
