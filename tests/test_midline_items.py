"""Mid-line items derived from line items (lab/evaluation/midline.py)."""
from lab.evaluation.midline import midline_items


def item(middle, prefix="x = 1\n", suffix="y = 2\n"):
    return {"prefix": prefix, "middle": middle, "suffix": suffix, "language": "python"}


def test_the_cursor_goes_inside_the_last_bracket_that_closes_on_the_line():
    (derived,) = midline_items([item("    total = count(read_lines(path), 3)\n")])
    assert derived["prefix"].endswith("total = count(read_lines(")
    assert derived["middle"] == "path"
    assert derived["suffix"].startswith("), 3)\n")
    assert derived["prefix"] + derived["middle"] + derived["suffix"] == "x = 1\n    total = count(read_lines(path), 3)\ny = 2\n"


def test_lines_without_a_usable_bracket_are_skipped():
    assert midline_items([item("    return x\n"), item("    f()\n"), item("    f('(a)')\n"), item("    g(\n")]) == []
