"""The server's pure parts: typed-through cache, settings parsing, cross-file context, stats."""
from __future__ import annotations

from infill_lsp.config import LspSettings, check_sampler_overrides, parse_settings
from infill_lsp.cross_file import cross_file_context
from infill_lsp.usage_stats import Stats, percentile
from infill_lsp.suggestion_cache import SuggestionCache
from infill_lsp.text import TextDocument


def test_cache_serves_the_rest_while_typing_through_and_backspacing() -> None:
    cache = SuggestionCache()
    cache.store("u", "def f(", ")\n", "a, b", "s1")
    assert cache.lookup("u", "def f(", ")\n")[0] == "a, b"
    assert cache.lookup("u", "def f(a", ")\n")[0] == ", b"
    assert cache.lookup("u", "def f(a, ", ")\n")[0] == "b"
    assert cache.lookup("u", "def f(a", ")\n")[0] == ", b"  # backspaced
    assert cache.lookup("u", "def f(a, b", ")\n") is None  # typed to the end: ask the model
    assert cache.lookup("u", "def f(x", ")\n") is None  # typed something else
    assert cache.lookup("u", "def f(a", "):\n") is None  # the text after the cursor changed
    assert cache.lookup("u", "def f", ")\n") is None  # deleted past where it was asked
    assert cache.lookup("other", "def f(", ")\n") is None
    cache.forget("u")
    assert cache.lookup("u", "def f(", ")\n") is None


def test_settings_parse_camel_case_sampler_knobs_and_report_bad_values() -> None:
    settings, problems = parse_settings(
        {"infill": {"modelDir": "/m", "debounceMs": 5, "maxTokens": 32, "constrained": False,
                    "sampler": {"temperature": 0.2}, "crossFileChars": -1, "bogus": "x"}},
        LspSettings(),
    )
    assert settings.model_dir == "/m"
    assert settings.debounce_ms == 5
    assert settings.cross_file_chars == LspSettings().cross_file_chars  # -1 rejected
    assert dict(settings.sampler) == {"max_tokens": 32, "constrained": False, "temperature": 0.2}
    assert len(problems) == 2 and any("crossFileChars" in p for p in problems) and any("bogus" in p for p in problems)
    _, problems = parse_settings(["not", "an", "object"], LspSettings())
    assert problems and "object" in problems[0]


def test_sampler_overrides_checked_against_the_engine_fields() -> None:
    known, problems = check_sampler_overrides({"max_tokens": 8, "constrained": True, "nonsense": 1, "temperature": True})
    assert known == {"max_tokens": 8, "constrained": True}
    assert any("nonsense" in p for p in problems) and any("temperature" in p for p in problems)


def test_cross_file_context_is_commented_same_language_and_bounded() -> None:
    current = TextDocument("file:///w/a.py", "python", 1, "x = 1\n")
    helper = TextDocument("file:///w/helper.py", "python", 1, "import os\n\ndef helper(n):\n    return n * 2\n" * 50)
    script = TextDocument("file:///w/app.js", "javascript", 1, "function js() {}\n")
    block = cross_file_context(current, [script, helper], budget_chars=300)
    assert 0 < len(block) <= 301
    assert "helper.py" in block and "def helper(n):" in block and "function js" not in block
    assert "return n * 2" not in block  # indented bodies are left out
    assert all(line.startswith("#") for line in block.splitlines() if line)
    assert cross_file_context(current, [helper], budget_chars=0) == ""
    unknown = TextDocument("file:///w/a.xyz", "xyz", 1, "")
    assert cross_file_context(unknown, [helper], budget_chars=300) == ""


def test_stats_percentiles_and_acceptance_rate() -> None:
    assert percentile([], 0.5) is None
    assert percentile([5, 1, 3, 2, 4], 0.5) == 3
    assert percentile(list(range(1, 101)), 0.99) == 99
    stats = Stats()
    for ms in (10, 20, 30, 40):
        stats.answered(ms, shown=True)
    stats.answered(1, shown=False)
    stats.count("accepted")
    snapshot = stats.snapshot()
    assert snapshot["shown"] == 4 and snapshot["accepted"] == 1 and snapshot["acceptance_rate"] == 0.25
    assert snapshot["latency_ms"]["samples"] == 5 and snapshot["latency_ms"]["p50"] == 20


def test_an_empty_list_is_an_empty_settings_object():
    # Lua's `settings = {}` (the README's setup) reaches the server as an empty JSON list.
    for empty in ([], {}, None):
        settings, problems = parse_settings(empty, LspSettings(debounce_ms=7))
        assert problems == [] and settings == LspSettings(debounce_ms=7)
    settings, problems = parse_settings({"infill": []}, LspSettings())
    assert problems == [] and settings == LspSettings()
    _, problems = parse_settings([1], LspSettings())
    assert problems == ["settings must be an object, got list"]
