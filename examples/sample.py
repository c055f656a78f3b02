"""A small file to try infill on: `make demo` runs `infill complete examples/sample.py --line 9 --column 15`.

Line 9 has a hole to fill: the argument of `open()`, which the code around it names.
"""
import os


def read_lines(path):
    with open() as fh:
        return [line.rstrip("\n") for line in fh]


def count_words(lines):
    counts = {}
    for line in lines:
        for word in line.split():
            counts[word] = counts.get(word, 0) + 1
    return counts


def main():
    path = os.path.join(os.path.dirname(__file__), "sample.py")
    counts = count_words(read_lines(path))
    for word, n in sorted(counts.items(), key=lambda kv: -kv[1])[:5]:
        print(f"{n:4d} {word}")


if __name__ == "__main__":
    main()
