"""The last resort's `valid` end in a wide syntax window (engine/ending.py `ending_tokens`):
each ending it tries is a final check, which parses the window, and a class that fills
its file makes the window the whole file. Run on the embedded model."""
from __future__ import annotations

import pytest

import engine.api
import engine.request


@pytest.fixture(scope="module")
def eng():
    return engine.api.load(None)


def test_the_last_resort_tries_fewer_endings_in_a_wide_window(eng, monkeypatch) -> None:
    """A class that fills its file makes the syntax window the whole file (its edges are
    clean only there): the last resort's `valid` end then tries fewer tokens a pass
    (engine/ending.py `ending_tokens`); a small file keeps them all."""
    from engine import ending

    runs = []
    init = engine.request.InfillRun.__init__

    def remember(self, *args, **kwargs):
        init(self, *args, **kwargs)
        runs.append(self)

    monkeypatch.setattr(engine.request.InfillRun, "__init__", remember)
    methods = "".join(f"  method{i}(value) {{\n    const doubled = value * {i};\n    return this.helper(doubled, '{i}');\n  }}\n\n" for i in range(400))
    prefix = "class Store {\n  constructor() {\n    this.items = [];\n  }\n\n  add(item) {\n    "
    suffix = "\n  }\n\n" + methods + "}\n"
    for text_prefix, text_suffix, wide in ((prefix, suffix, True), (prefix, "\n  }\n}\n", False)):
        eng.forget_context()
        eng.infill(text_prefix, text_suffix, language="javascript")
        last_resort = next(modes for _, modes in runs[-1].schedule if modes.end_when_valid)
        size = runs[-1].request.window_bytes
        assert (size > ending.ENDING_WINDOW_BYTES) is wide
        assert last_resort.ending_tokens == ending.ending_tokens(size)
        assert (last_resort.ending_tokens < ending.ENDING_TOKENS) is wide
