"""The typing replay's stretch: whole lines by default, so the file after the cursor stays
intact (a stretch cut mid-identifier leaves a rest no completion can repair); and its
per-keystroke log."""
from lab.loadtest.typing_replay import typed_stretch

TEXT = "import os\n\ndef f(x):\n    return os.path.join(x, 'a')\n\nprint(f('b'))\n"


def test_whole_lines_from_the_line_at_the_fraction_to_where_the_characters_run_out():
    start, end = typed_stretch(TEXT, 0.2, 15, "lines")  # 0.2 falls inside `def f(x):`: the stretch starts at the next line
    assert TEXT[start - 1] == "\n" and TEXT[end - 1] == "\n"
    assert TEXT[start:end] == "    return os.path.join(x, 'a')\n"
    assert TEXT[end:] == "\nprint(f('b'))\n"


def test_none_types_exactly_the_characters_asked():
    start, end = typed_stretch(TEXT, 0.2, 10, "none")
    assert (start, end) == (int(len(TEXT) * 0.2), int(len(TEXT) * 0.2) + 10)


def test_a_stretch_at_the_end_of_the_file_is_empty_or_short_not_an_error():
    assert typed_stretch(TEXT, 1.0, 10, "lines") == (len(TEXT), len(TEXT))
    start, end = typed_stretch(TEXT, 0.9, 100, "lines")
    assert end == len(TEXT) and start <= end


def test_statements_grow_the_stretch_until_the_rest_of_the_file_parses():
    text = "def f(x):\n    if x:\n        return 1\n    return 2\n\n\nprint(f(1))\n"
    start, end = typed_stretch(text, 0.1, 5, "statements")  # from `    if x:`: removing it alone leaves `return 1` over-indented
    assert text[start:end] == "    if x:\n        return 1\n"
    compile(text[:start] + text[end:], "<rest>", "exec")
    assert typed_stretch(text, 0.1, 5, "lines") == (start, start + len("    if x:\n"))


def test_enter_first_types_a_newline_then_the_lines_and_leaves_the_same_file():
    from lab.loadtest.typing_replay import keystrokes

    start, end = typed_stretch(TEXT, 0.2, 15, "lines")
    assert keystrokes(TEXT, start, end, "as-written") == (start, TEXT[start:end])
    at, typed = keystrokes(TEXT, start, end, "enter-first")
    assert (at, typed) == (start - 1, "\n    return os.path.join(x, 'a')")
    initial = TEXT[:at] + TEXT[at + len(typed):]
    assert initial[at] == "\n"  # the cursor's line ends right where typing starts
    assert initial[:at] + typed + initial[at:] == TEXT


def test_the_json_logs_every_keystroke_with_what_came_back(tmp_path) -> None:
    """`--json` carries one entry per keystroke (delivered, empty or cancelled, with the
    time and the text), and the log agrees with the summary's counts, however the
    keystrokes raced the server."""
    import json

    from lab.loadtest import typing_replay

    out = tmp_path / "replay.json"
    assert typing_replay.main(["--tiny", "--unconstrained", "--chars", "12", "--align", "none",
                               "--interval-ms", "60", "--json", str(out)]) == 0
    summary = json.loads(out.read_text())
    log = summary["keystrokes_log"]
    assert [entry["key"] for entry in log] == list(range(summary["keystrokes"]))
    assert "".join(entry["char"] for entry in log) == summary["typed_text"]
    outcomes = [entry["outcome"] for entry in log]
    assert outcomes.count("delivered") == summary["suggestions_delivered"]
    assert outcomes.count("empty") == summary["empty_answers"]
    assert outcomes.count("cancelled") == summary["cancelled_replies"]
    assert all(entry["text"] for entry in log if entry["outcome"] == "delivered")
    assert all(entry["ms"] >= 0 for entry in log if entry["outcome"] != "cancelled")
