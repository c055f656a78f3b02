"""Near-duplicate detection for the corpus: MinHash over token shingles, banded LSH.

Exact duplicates are removed by content hash in corpus.py; this catches the copies that
differ a little: vendored libraries, a `cjs/` and an `esm/` build of the same module,
model files "Copied from" one another, a file with a different licence header. Two files
are near-duplicates when the Jaccard similarity of their sets of 5-token shingles,
estimated from a 128-value MinHash signature, is at least 0.8.

Cost matters (hundreds of MB on two shared cores), so everything is vectorized numpy:
tokens are found and hashed on the UTF-8 bytes (a token is a run of word bytes, or one
punctuation byte; whitespace separates and is dropped, so re-indented copies match), and
the signature is a one-permutation MinHash (each shingle hash falls into one of 128
bins, the signature is each bin's minimum; empty bins borrow from the next non-empty
bin, "densification", Shrivastava & Li 2014), O(shingles) instead of O(128 x shingles).

Everything is deterministic: the hashes are fixed polynomials and mixers (not Python's
salted `hash`), and which copy is kept depends only on the order files are offered in.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

SHINGLE_TOKENS = 5
NUM_PERM = 128  # signature length (bins)
ROWS = 6  # LSH band height: 21 bands of 6 rows; a pair at Jaccard 0.8 is a candidate with p = 0.998
THRESHOLD = 0.8
_BIN_BITS = 7  # 2**7 = NUM_PERM bins
_EMPTY = np.uint64(2**64 - 1)
_P = 0x100000001B3  # FNV-style odd multiplier for the byte polynomial
_P_INV = pow(_P, -1, 2**64)
_Q = np.uint64(0x9E3779B97F4A7C15)  # shingle combination multiplier

# Byte classes: word bytes (ASCII letters, digits, '_', and every non-ASCII byte, so a
# UTF-8 character stays inside its word), whitespace, and punctuation (one token each).
_WORD = np.zeros(256, dtype=bool)
for _c in b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_":
    _WORD[_c] = True
_WORD[128:] = True
_SPACE = np.zeros(256, dtype=bool)
for _c in b" \t\n\r\f\v":
    _SPACE[_c] = True
_POWERS: dict[str, np.ndarray] = {}


def _powers(n: int) -> tuple[np.ndarray, np.ndarray]:
    """P**j and P**-j modulo 2**64 for j < n (cached, grown on demand)."""
    if _POWERS.get("n", np.zeros(1))[0] < n:
        size = max(n, 1 << 18)
        with np.errstate(over="ignore"):
            _POWERS["pow"] = np.cumprod(np.r_[np.uint64(1), np.full(size - 1, _P, dtype=np.uint64)], dtype=np.uint64)
            _POWERS["inv"] = np.cumprod(np.r_[np.uint64(1), np.full(size - 1, _P_INV, dtype=np.uint64)], dtype=np.uint64)
        _POWERS["n"] = np.array([size])
    return _POWERS["pow"][:n], _POWERS["inv"][:n]


def token_hashes(text: str) -> np.ndarray:
    """64-bit hash of each token of the text, in order."""
    data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    if data.size == 0:
        return np.zeros(0, dtype=np.uint64)
    word, punct = _WORD[data], ~(_WORD[data] | _SPACE[data])
    prev_word = np.r_[False, word[:-1]]
    next_word = np.r_[word[1:], False]
    starts = np.flatnonzero((word & ~prev_word) | punct)
    ends = np.flatnonzero((word & ~next_word) | punct) + 1
    pw, inv = _powers(data.size + 1)
    with np.errstate(over="ignore"):
        prefix = np.r_[np.uint64(0), np.cumsum((data.astype(np.uint64) + np.uint64(1)) * pw[: data.size], dtype=np.uint64)]
        return (prefix[ends] - prefix[starts]) * inv[starts]


def shingle_hashes(text: str, k: int = SHINGLE_TOKENS) -> np.ndarray:
    """The distinct 64-bit hashes of the text's k-token shingles (a text shorter than k
    tokens is one shingle)."""
    ids = token_hashes(text)
    if ids.size == 0:
        return ids
    n = max(1, ids.size - k + 1)
    shingles = np.zeros(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for i in range(min(k, ids.size)):
            shingles = shingles * _Q + ids[i : i + n]
        # Final avalanche (splitmix64's finalizer) so that bins and values are uniform.
        shingles ^= shingles >> np.uint64(30)
        shingles *= np.uint64(0xBF58476D1CE4E5B9)
        shingles ^= shingles >> np.uint64(27)
        shingles *= np.uint64(0x94D049BB133111EB)
        shingles ^= shingles >> np.uint64(31)
    return np.unique(shingles)


def signature(text: str) -> np.ndarray:
    """One-permutation MinHash signature (NUM_PERM uint64 values) of the text's shingles."""
    shingles = shingle_hashes(text)
    sig = np.full(NUM_PERM, _EMPTY, dtype=np.uint64)
    if shingles.size == 0:
        return sig
    bins = (shingles >> np.uint64(64 - _BIN_BITS)).astype(np.intp)
    values = shingles & np.uint64((1 << (64 - _BIN_BITS)) - 1)
    np.minimum.at(sig, bins, values)
    empty = sig == _EMPTY
    if empty.any():
        # Densify: an empty bin takes the value of the next non-empty bin (circularly),
        # tagged with the distance so that borrowed values only match borrowed values
        # from the same distance.
        filled = np.flatnonzero(~empty)
        idx = np.arange(NUM_PERM)
        nxt = np.searchsorted(filled, idx) % filled.size
        distance = (filled[nxt] - idx) % NUM_PERM
        with np.errstate(over="ignore"):
            borrowed = sig[filled[nxt]] + (distance.astype(np.uint64) << np.uint64(64 - _BIN_BITS))
        sig = np.where(empty, borrowed, sig)
    return sig


def similarity(a: np.ndarray, b: np.ndarray) -> float:
    """Estimated Jaccard similarity of two signatures."""
    return float(np.count_nonzero(a == b)) / a.size


@dataclass
class NearDuplicateIndex:
    """Banded LSH over MinHash signatures: `match` finds a kept file whose estimated
    Jaccard with the query is >= threshold; `add` keeps a file."""

    threshold: float = THRESHOLD
    rows: int = ROWS
    _buckets: list[dict[bytes, list[int]]] = field(default_factory=list)
    _signatures: list[np.ndarray] = field(default_factory=list)
    _keys: list[object] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._buckets = [{} for _ in range(NUM_PERM // self.rows)]

    def _band_keys(self, sig: np.ndarray) -> list[bytes]:
        return [sig[i * self.rows : (i + 1) * self.rows].tobytes() for i in range(len(self._buckets))]

    def match(self, sig: np.ndarray) -> tuple[object, float] | None:
        """(key, similarity) of the first kept file that is a near-duplicate, or None."""
        seen: set[int] = set()
        for band, key in zip(self._buckets, self._band_keys(sig)):
            for idx in band.get(key, ()):
                if idx not in seen:
                    seen.add(idx)
                    sim = similarity(sig, self._signatures[idx])
                    if sim >= self.threshold:
                        return self._keys[idx], sim
        return None

    def add(self, key: object, sig: np.ndarray) -> None:
        idx = len(self._signatures)
        self._signatures.append(sig)
        self._keys.append(key)
        for band, band_key in zip(self._buckets, self._band_keys(sig)):
            band.setdefault(band_key, []).append(idx)

    def __len__(self) -> int:
        return len(self._signatures)
