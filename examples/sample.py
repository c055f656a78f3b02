"""A small file to try infill on: `make demo` runs `infill complete examples/sample.py --line 23 --column 37`.

Line 23 has a hole to fill: the argument of `read_lines()`, which the code around it names.
"""
import os


def read_lines(path):
    with open(path) as fh:
        return [line.rstrip("\n") for line in fh]


def count_words(lines):
    counts = {}
    for line in lines:
        for word in line.split():
            counts[word] = counts.get(word, 0) + 1
    return counts


def main():
    path = os.path.join(os.path.dirname(__file__), "sample.py")
    counts = count_words(read_lines())
    for word, n in sorted(counts.items(), key=lambda kv: -kv[1])[:5]:
        print(f"{n:4d} {word}")


if __name__ == "__main__":
    main()
