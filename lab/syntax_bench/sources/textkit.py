"""Text utilities: a tokenizer, word statistics and a line wrapper."""
import re

WORD = re.compile(r"[A-Za-z]+(?:'[a-z]+)?")
STOP_WORDS = {"a", "an", "and", "the", "of", "to", "in", "is", "it"}


def tokenize(text, keep_case=False):
    words = WORD.findall(text)
    if not keep_case:
        words = [word.lower() for word in words]
    return words


def word_counts(text, skip_stop_words=True):
    counts = {}
    for word in tokenize(text):
        if skip_stop_words and word in STOP_WORDS:
            continue
        counts[word] = counts.get(word, 0) + 1
    return counts


def top_words(text, n=10):
    counts = word_counts(text)
    ranked = sorted(counts.items(), key=lambda pair: (-pair[1], pair[0]))
    return ranked[:n]


def wrap(text, width=72, indent=""):
    lines = []
    current = indent
    for word in text.split():
        if len(current) + len(word) + 1 > width and current.strip():
            lines.append(current.rstrip())
            current = indent
        current += word + " "
    if current.strip():
        lines.append(current.rstrip())
    return lines


def sentences(text):
    result = []
    start = 0
    for index, char in enumerate(text):
        if char in ".!?" and (index + 1 == len(text) or text[index + 1].isspace()):
            piece = text[start : index + 1].strip()
            if piece:
                result.append(piece)
            start = index + 1
    tail = text[start:].strip()
    if tail:
        result.append(tail)
    return result


def reading_time(text, words_per_minute=200):
    count = len(tokenize(text))
    minutes, seconds = divmod(round(count * 60 / words_per_minute), 60)
    if minutes == 0:
        return f"{seconds} s"
    return f"{minutes} min {seconds} s"


def caesar(text, shift):
    out = []
    for char in text:
        if char.isalpha():
            base = ord("A") if char.isupper() else ord("a")
            out.append(chr((ord(char) - base + shift) % 26 + base))
        else:
            out.append(char)
    return "".join(out)


def edit_distance(left, right):
    previous = list(range(len(right) + 1))
    for i, a in enumerate(left, start=1):
        current = [i]
        for j, b in enumerate(right, start=1):
            cost = 0 if a == b else 1
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost))
        previous = current
    return previous[-1]


def closest(word, vocabulary, limit=3):
    scored = []
    for candidate in vocabulary:
        distance = edit_distance(word, candidate)
        if distance <= limit:
            scored.append((distance, candidate))
    scored.sort()
    return [candidate for _, candidate in scored[:5]]


def slugify(title, separator="-"):
    words = tokenize(title)
    while words and words[-1] in STOP_WORDS:
        words.pop()
    return separator.join(words)


def justify(words, width):
    if len(words) == 1:
        return words[0].ljust(width)
    gaps = len(words) - 1
    spaces = width - sum(len(word) for word in words)
    line = ""
    for index, word in enumerate(words[:-1]):
        extra = 1 if index < spaces % gaps else 0
        line += word + " " * (spaces // gaps + extra)
    return line + words[-1]


def column_table(rows, padding=2):
    if not rows:
        return ""
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [str(cell).ljust(widths[i] + padding) for i, cell in enumerate(row)]
        lines.append("".join(cells).rstrip())
    return "\n".join(lines)


class Highlighter:
    def __init__(self, terms, marker="*"):
        self.terms = {term.lower() for term in terms}
        self.marker = marker

    def highlight(self, text):
        words = text.split(" ")
        for index, word in enumerate(words):
            bare = word.strip(".,;:!?").lower()
            if bare in self.terms:
                words[index] = self.marker + word + self.marker
        return " ".join(words)

    def count(self, text):
        total = 0
        for word in tokenize(text):
            if word in self.terms:
                total += 1
        return total
