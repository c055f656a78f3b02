"""The autoregressive baseline: the same weights, the middle written one token per pass.

The embedded model's prefix is a causal language-model stream with a next-token head
(training puts a next-token loss on every prefix position, engine/model.py). The stream's
decoding lives here, not in the model: only this baseline uses it, and the wheel ships
only what serving needs. Decoding the
middle through that stream, greedily, one token per forward pass with an exact KV cache
(one new row per token), is how the same weights would be served by an ordinary LLM
server, and it is the speed baseline the diffusion sampler is measured against
(`python -m lab bench --concurrency`, lab/concurrency/).

It never sees the suffix, so it has no end-of-middle either. A decode stops at the end
of its first line (`lines=1`, the usual single-line completion policy of left-to-right
completion plugins; on 60 dev items it matched the held-out line as often as any
multi-line rule tried, see docs/batching.md), at `max_tokens`, or when a finished line
equals the suffix's first non-blank line (the text ran into what already follows the
cursor: that line is dropped; the suffix is only compared with, never given to the
model). Its exact match is reported next to its speed; the comparison is one of speed.

Requests are decoded together (`DecodeBatch`): every pass feeds one token per unfinished
request through `next_token_logits` (the model's packed pass: shared linear layers, attention per
request); a request joins at any pass and leaves the batch when it stops.

With drafts (`CopyDrafts`, the sweep's `autoregressive+drafts` mode) it is prompt-lookup
decoding: each pass feeds the current token and a draft of up to K tokens guessed from the
context by the diffusion sampler's own copy rule (engine/copying.py's CopyIndex over the
prefix, then the suffix, chained guess by guess and stopped after a newline as its rule 7
is) as 1+k causal rows through the KV cache (`verify_logits`); the longest start of the
draft that equals the greedy predictions is kept, plus the model's next token, and the
rejected draft rows are dropped from the cache (the stream's `length` rolled back). The
text is the greedy decode's, token for token; only the passes it takes differ. The
suffix serves only as a source of guesses: the model still never reads it.

With workspace drafts (the sweep's `autoregressive+workspace` mode, on real lines) the
first pass verifies the candidate lines the workspace proposes for the cursor (up to the
16 best-ranked, as the diffusion engine judges in its first pass, engine/drafts.py), merged
where they start alike into one tree of rows (`DraftTree`, `prefill_tree`: each row attends
to the prefix and its own draft's earlier rows): the longest path the greedy predictions
follow is kept, its rows moved to the stream's next positions, the rest dropped. Later
passes verify the copy rule's drafts as above. The text is still the greedy decode's.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Optional, Sequence

import torch
import torch.nn.functional as F

from engine.copying import COPY_NGRAMS, CopyIndex
from engine.drafts import MAX_DRAFT_TOKENS, VERIFIED_DRAFTS
from engine.model import EncodedContext, InfillTransformer
from engine.tokenizer import Tokenizer


@dataclass
class DecodeStream:
    """One request's causal prefix stream, decoded token by token. Per layer, rotated keys
    and values in buffers with spare rows; rows [0, length) are filled, and each decoded
    token appends exactly one row: an exact KV cache, since a prefix token never attends
    to anything after it."""

    keys: list[torch.Tensor]  # per layer (1, H, capacity, Dh) rotated
    values: list[torch.Tensor]  # per layer (1, H, capacity, Dh)
    length: int

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Write one row (k, v: (1, H, Dh)) at `length`; the keys/values including it."""
        if self.length >= self.keys[layer].shape[2]:  # full: double the room (amortised O(1) per row)
            self.keys[layer] = torch.cat([self.keys[layer], torch.empty_like(self.keys[layer])], dim=2)
            self.values[layer] = torch.cat([self.values[layer], torch.empty_like(self.values[layer])], dim=2)
        self.keys[layer][:, :, self.length] = k
        self.values[layer][:, :, self.length] = v
        return self.keys[layer][:, :, : self.length + 1], self.values[layer][:, :, : self.length + 1]

    def extend(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Write n rows (k, v: (1, H, n, Dh)) at `length`; the keys/values including them.
        Rows past `length` are free: a rejected draft's rows are dropped by rolling
        `length` back, and the next rows written over them."""
        n = k.shape[2]
        while self.length + n > self.keys[layer].shape[2]:
            self.keys[layer] = torch.cat([self.keys[layer], torch.empty_like(self.keys[layer])], dim=2)
            self.values[layer] = torch.cat([self.values[layer], torch.empty_like(self.values[layer])], dim=2)
        self.keys[layer][:, :, self.length : self.length + n] = k
        self.values[layer][:, :, self.length : self.length + n] = v
        return self.keys[layer][:, :, : self.length + n], self.values[layer][:, :, : self.length + n]


def decode_stream(cache: EncodedContext, room: int = 64) -> DecodeStream:
    """A stream for token-by-token decoding after the cached prefix, with `room` spare rows.

    It holds the prefix minus its last token: that token is the first one fed to
    next_token_logits, because the cache keeps keys and values, not the last hidden
    state whose head predicts the first new token."""
    P = cache.prefix_len
    if P == 0:
        raise ValueError("autoregressive decoding needs at least one prefix token (e.g. BOS)")
    keys, values = [], []
    for layer in cache.layers:
        H, Dh = layer.prefix_k.shape[1], layer.prefix_k.shape[3]
        k = layer.prefix_k.new_empty(1, H, P + max(1, room), Dh)
        v = layer.prefix_v.new_empty(1, H, P + max(1, room), Dh)
        k[:, :, : P - 1], v[:, :, : P - 1] = layer.prefix_k[:, :, : P - 1], layer.prefix_v[:, :, : P - 1]
        keys.append(k)
        values.append(v)
    return DecodeStream(keys, values, P - 1)


@torch.no_grad()
def prefill_stream(model: InfillTransformer, prefix_ids: list[int], room: int = 64, draft: Sequence[int] = ()) -> tuple[DecodeStream, torch.Tensor]:
    """The prefill as an autoregressive server runs it: one causal forward over the whole
    prefix that fills the KV cache and yields the first new token's logits (V,) from the
    last row. Returns the stream (every prefix token in it, `room` rows spare) and those
    logits. The diffusion engine's counterpart is `InfillTransformer.encode_with_canvas`
    (its first canvas pass encodes the context), so both count the prefill as the pass
    that writes the first token.

    With a `draft` of k tokens the same forward runs over prefix + draft: the stream then
    holds them too (`length` P + k, for the caller to roll back past the rejected ones)
    and the logits are (1 + k, V), row j predicting the token after the prefix and the
    draft's first j tokens."""
    if not prefix_ids:
        raise ValueError("autoregressive decoding needs at least one prefix token (e.g. BOS)")
    device = model.embed.weight.device
    P, n = len(prefix_ids), len(draft)
    T = P + n
    cos, sin = model._rope(torch.arange(T, device=device).unsqueeze(0))
    x = model.embed(torch.tensor([list(prefix_ids) + list(draft)], dtype=torch.long, device=device))
    last_mask = _causal_tail(P - 1, 1 + n, device) if n else None  # the last 1+n rows' keys
    keys, values = [], []
    for i, block in enumerate(model.blocks):
        q, k, v = block.inputs_step(block, x, cos, sin)
        kb, vb = _with_room(k, v, T, room)
        keys.append(kb)
        values.append(vb)
        if i == len(model.blocks) - 1:  # only the last 1+n rows' outputs feed new tokens
            x = block.output_step(block, x[:, -1 - n :], F.scaled_dot_product_attention(q[:, :, -1 - n :], k, v, attn_mask=last_mask))
        else:
            x = block.output_step(block, x, F.scaled_dot_product_attention(q, k, v, is_causal=True))
    logits = model.logits(model.final_norm(x))[0]
    return DecodeStream(keys, values, T), (logits if n else logits[-1])


@dataclass(frozen=True)
class DraftTree:
    """Several drafts for one pass merged where they start alike (a trie): one row per
    node, a parent before its children. Node n holds `tokens[n]` at depth `depths[n]`
    (0: the first token after the prefix) under node `parents[n]` (-1: the prefix)."""

    tokens: tuple[int, ...]
    parents: tuple[int, ...]
    depths: tuple[int, ...]

    @classmethod
    def of(cls, drafts: Sequence[Sequence[int]]) -> "DraftTree":
        tokens: list[int] = []
        parents: list[int] = []
        depths: list[int] = []
        node_of: dict[tuple[int, int], int] = {}
        for draft in drafts:
            parent = -1
            for depth, token in enumerate(draft):
                node = node_of.get((parent, token))
                if node is None:
                    node = node_of[(parent, token)] = len(tokens)
                    tokens.append(token)
                    parents.append(parent)
                    depths.append(depth)
                parent = node
        return cls(tuple(tokens), tuple(parents), tuple(depths))

    def __len__(self) -> int:
        return len(self.tokens)

    def children(self) -> dict[tuple[int, int], int]:
        """(parent node, token) -> child node."""
        return {(parent, token): node for node, (parent, token) in enumerate(zip(self.parents, self.tokens))}

    def mask(self, prefix_len: int, device=None) -> torch.Tensor:
        """The tree's rows' (N, P + N) attention mask over the prefix and the tree: a node
        sees the whole prefix, its ancestors and itself."""
        P, N = prefix_len, len(self.tokens)
        mask = torch.zeros(N, P + N, dtype=torch.bool)
        mask[:, :P] = True
        tree = mask[:, P:]
        for node, parent in enumerate(self.parents):
            if parent >= 0:
                tree[node] = tree[parent]
            tree[node, node] = True
        return mask.to(device) if device is not None else mask

    def follow(self, predictions: Sequence[int]) -> list[int]:
        """The longest path of nodes whose tokens the greedy predictions agree with:
        predictions[0] is the prefix row's, predictions[1 + n] node n's."""
        children = self.children()
        path: list[int] = []
        node = -1
        while (child := children.get((node, predictions[0 if node < 0 else 1 + node]))) is not None:
            path.append(child)
            node = child
        return path


def line_drafts(tok: Tokenizer, drafts: Sequence, removed: str = "", max_drafts: int = VERIFIED_DRAFTS, max_tokens: int = 64) -> list[list[int]]:
    """The workspace's candidate lines (engine/workspace/retrieve.py `Draft`, best-ranked
    first) as token drafts for the left-to-right decode, as the diffusion engine encodes
    the ones it judges (engine/drafts.py `candidates`: the text token healing cut from the
    prefix, `removed`, then the draft's text; at most `max_drafts`, each shorter than
    MAX_DRAFT_TOKENS), ended by the newline the decode stops after, where the engine's
    end with its end of middle."""
    newline = tok.encode("\n")
    out = []
    for draft in drafts[:max_drafts]:
        ids = tok.encode(removed + draft.text.rstrip())
        if 0 < len(ids) < min(MAX_DRAFT_TOKENS, max_tokens):
            out.append(ids + newline)
    return out


@torch.no_grad()
def prefill_tree(model: InfillTransformer, prefix_ids: list[int], tree: DraftTree, room: int = 64) -> tuple[DecodeStream, torch.Tensor]:
    """`prefill_stream` with a tree of drafts after the prefix (tree attention): returns
    the stream (prefix and every node, `length` P + N, for `keep_path` to compact) and
    (1 + N, V) logits, row 0 predicting the first token after the prefix and row 1 + n
    the token after node n."""
    if not prefix_ids:
        raise ValueError("autoregressive decoding needs at least one prefix token (e.g. BOS)")
    device = model.embed.weight.device
    P, N = len(prefix_ids), len(tree)
    T = P + N
    positions = torch.cat([torch.arange(P), P + torch.tensor(tree.depths, dtype=torch.long)]).to(device)
    cos, sin = model._rope(positions.unsqueeze(0))
    x = model.embed(torch.tensor([list(prefix_ids) + list(tree.tokens)], dtype=torch.long, device=device))
    mask = tree.mask(P, device)
    keys, values = [], []
    for i, block in enumerate(model.blocks):
        q, k, v = block.inputs_step(block, x, cos, sin)
        kb, vb = _with_room(k, v, T, room)
        keys.append(kb)
        values.append(vb)
        # The tree's rows through the mask; the prefix's causally, on its own keys (the
        # fused kernel: a masked pass over every row cost ~1.4x as much on this CPU).
        tree_rows = F.scaled_dot_product_attention(q[:, :, P:], k, v, attn_mask=mask)
        if i == len(model.blocks) - 1:  # only the prefix's last row and the tree's feed new tokens
            last = F.scaled_dot_product_attention(q[:, :, P - 1 : P], k[:, :, :P], v[:, :, :P])
            x = block.output_step(block, x[:, P - 1 :], torch.cat([last, tree_rows], dim=2))
        else:
            prefix_rows = F.scaled_dot_product_attention(q[:, :, :P], k[:, :, :P], v[:, :, :P], is_causal=True)
            x = block.output_step(block, x, torch.cat([prefix_rows, tree_rows], dim=2))
    logits = model.logits(model.final_norm(x))[0]
    return DecodeStream(keys, values, T), logits


def keep_path(stream: DecodeStream, prefix_len: int, path: Sequence[int]) -> None:
    """After `prefill_tree`: the kept path's rows moved to positions P.. (their keys were
    rotated for those positions: a node's position is P + its depth), the other nodes'
    rows dropped."""
    if path:
        rows = torch.tensor([prefix_len + n for n in path], dtype=torch.long, device=stream.keys[0].device)
        for layer in range(len(stream.keys)):
            stream.keys[layer][:, :, prefix_len : prefix_len + len(path)] = stream.keys[layer][:, :, rows]
            stream.values[layer][:, :, prefix_len : prefix_len + len(path)] = stream.values[layer][:, :, rows]
    stream.length = prefix_len + len(path)


def _with_room(k: torch.Tensor, v: torch.Tensor, filled: int, room: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A layer's (1, H, filled, Dh) keys and values copied into buffers with `room` more
    positions (at least one) for the tokens decoded next."""
    H, Dh = k.shape[1], k.shape[3]
    kb, vb = k.new_empty(1, H, filled + max(1, room), Dh), v.new_empty(1, H, filled + max(1, room), Dh)
    kb[:, :, :filled], vb[:, :, :filled] = k, v
    return kb, vb


def _causal_tail(start: int, rows: int, device) -> torch.Tensor:
    """The causal mask (rows, start + rows) of `rows` queries at positions start.. against
    every key up to each one's own position."""
    return torch.arange(start + rows, device=device).unsqueeze(0) <= torch.arange(start, start + rows, device=device).unsqueeze(1)


@torch.no_grad()
def next_token_logits(model: InfillTransformer, streams: Sequence[DecodeStream], tokens: torch.Tensor) -> torch.Tensor:
    """Feed tokens[b] to streams[b] at position streams[b].length, append its key and
    value there (one new row per stream) and return every stream's next-token logits,
    (B, V): the causal prefix stream's language-model head, which training puts a
    next-token loss on. Packed like canvas_logits_many (`InfillTransformer.packed_pass`):
    shared linears, attention per stream."""
    device = model.embed.weight.device
    positions = torch.tensor([s.length for s in streams], dtype=torch.long, device=device)

    def attend_each(i: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        out = []
        for b, stream in enumerate(streams):
            keys, values = stream.append(i, k[:, :, b], v[:, :, b])
            out.append(F.scaled_dot_product_attention(q[:, :, b : b + 1], keys, values))
        return torch.cat(out, dim=2)

    logits = model.packed_pass(tokens.to(device), positions, attend_each)[0]  # (B, V)
    for stream in streams:
        stream.length += 1
    return logits


@torch.no_grad()
def verify_logits(model: InfillTransformer, streams: Sequence[DecodeStream], rows: Sequence[Sequence[int]]) -> torch.Tensor:
    """next_token_logits with several rows per stream: rows[b] (the current token, then a
    draft) is fed to streams[b] at positions length.., causally (each row attends to the
    cache and the rows before it), and appended there; returns every row's next-token
    logits, (sum of the rows' lengths, V), stream after stream. The caller rolls each
    `length` back past the draft rows it rejects. One packed pass for every stream."""
    device = model.embed.weight.device
    sizes = [len(r) for r in rows]
    if not streams or len(streams) != len(rows) or min(sizes) < 1:
        raise ValueError("verify_logits needs one non-empty row list per stream")
    ids = torch.tensor([t for r in rows for t in r], dtype=torch.long)
    positions = torch.cat([torch.arange(s.length, s.length + n) for s, n in zip(streams, sizes)]).to(device)
    masks = [_causal_tail(s.length, n, device) if n > 1 else None for s, n in zip(streams, sizes)]

    def attend_each(i: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        out = []
        for stream, mask, q_rows, k_rows, v_rows in zip(streams, masks, q.split(sizes, dim=2), k.split(sizes, dim=2), v.split(sizes, dim=2)):
            keys, values = stream.extend(i, k_rows, v_rows)
            out.append(F.scaled_dot_product_attention(q_rows, keys, values, attn_mask=mask))
        return torch.cat(out, dim=2)

    logits = model.packed_pass(ids.to(device), positions, attend_each)[0]  # (R, V)
    for stream, n in zip(streams, sizes):
        stream.length += n
    return logits


class CopyDrafts:
    """Drafts for prompt-lookup decoding from the diffusion sampler's copy source
    (engine/copying.py): the CopyIndex over the prefix (and the suffix, where the prefix
    lacks a run) guesses the token after the last 2-4 tokens; the guess is appended and the
    next one guessed, up to `max_tokens`, stopping after a newline token (the sampler's
    rule 7 never extends a run past one, and rule 6 never guesses right after one)."""

    def __init__(self, index: CopyIndex, max_tokens: int = 6) -> None:
        self.index = index
        self.max_tokens = max_tokens

    @classmethod
    def of(cls, tok: Tokenizer, source: Sequence[int], suffix_ids: Sequence[int] = (), max_tokens: int = 6) -> "CopyDrafts":
        return cls(CopyIndex(source, tok.special_ids, suffix_ids), max_tokens)

    def draft(self, tok: Tokenizer, middle: Sequence[int], limit: int) -> list[int]:
        """Up to min(max_tokens, limit) guesses for the tokens after `middle` (the tokens
        decoded so far). At the middle's start the last prefix token may be a newline (the
        cursor at a line's start): rule 6 guesses there too."""
        left = self.index.source[-COPY_NGRAMS[0] :] + list(middle)
        out: list[int] = []
        while len(out) < min(self.max_tokens, limit):
            if (middle or out) and "\n" in tok.piece(left[-1]):
                break
            token = self.index.guess(left[-COPY_NGRAMS[0] :])
            if token is None:
                break
            out.append(token)
            left.append(token)
        return out


@dataclass
class DecodeResult:
    middle: str
    tokens: int  # tokens in the middle (a dropped suffix line is not counted)
    forwards: int  # passes spent, the context encoding counted as one
    stop_reason: str  # "lines" | "suffix" | "max_tokens" | "empty"
    ms: float = 0.0


def first_suffix_line(suffix: str) -> Optional[str]:
    """The suffix's first non-blank line, stripped; None if the suffix has none."""
    for line in suffix.splitlines():
        if line.strip():
            return line.strip()
    return None


@dataclass
class GreedyDecode:
    """One request's greedy decode: feed `next_token`, then `advance` with its logits; or,
    with `drafts`, feed [next_token] + `draft()` and `take_verified` the predictions."""

    tok: Tokenizer
    stream: DecodeStream
    next_token: int  # the token to feed in the next pass (first: the prefix's last token)
    max_tokens: int
    stop_line: Optional[str]
    lines: int = 1  # stop after this many lines (0: no line limit)
    generated: list[int] = field(default_factory=list)
    forwards: int = 1  # the context encoding
    result: Optional[DecodeResult] = None
    drafts: Optional[CopyDrafts] = None  # prompt-lookup drafts (None: one token per pass)
    drafted: int = 0  # draft tokens fed
    accepted: int = 0  # draft tokens kept

    @classmethod
    def start(cls, model: InfillTransformer, tok: Tokenizer, context: EncodedContext, suffix: str, max_tokens: int, lines: int = 1, drafts: Optional[CopyDrafts] = None) -> "GreedyDecode":
        state = cls(tok, decode_stream(context, room=max_tokens + 1), context.prefix_ids[-1], max_tokens, first_suffix_line(suffix), lines, drafts=drafts)
        if max_tokens <= 0:
            state.result = DecodeResult("", 0, state.forwards, "empty")
        return state

    @classmethod
    def prefill(cls, model: InfillTransformer, tok: Tokenizer, prefix_ids: list[int], suffix: str, max_tokens: int, lines: int = 1, drafts: Optional[CopyDrafts] = None, first_drafts: Sequence[Sequence[int]] = ()) -> "GreedyDecode":
        """A decode whose first token comes from the prefill pass itself (`prefill_stream`):
        n tokens in n forwards, as an autoregressive server counts them. With `drafts`
        the prefill verifies the first draft too; with `first_drafts` (token drafts, e.g.
        the workspace's lines, `line_drafts`) it verifies all of them and that draft as
        one tree (`prefill_tree`), keeping the longest path the greedy decode follows."""
        if max_tokens <= 0:
            state = cls.start(model, tok, model.encode_context(prefix_ids, []), suffix, max_tokens, lines)
            return state
        state = cls(tok, None, prefix_ids[-1], max_tokens, first_suffix_line(suffix), lines, forwards=0, drafts=drafts)  # type: ignore[arg-type]
        draft = state.draft()
        sequences = [list(d)[: max_tokens - 1] for d in first_drafts if d and max_tokens > 1]
        if sequences:
            tree = DraftTree.of(sequences + ([draft] if draft else []))
            state.stream, logits = prefill_tree(model, prefix_ids, tree, room=max_tokens + 1)
            predictions = greedy_tokens(logits, tok)
            path = tree.follow(predictions)
            keep_path(state.stream, len(prefix_ids), path)
            kept = [tree.tokens[n] for n in path]
            state.take_verified(kept, [predictions[0]] + [predictions[1 + n] for n in path])
            state.drafted += len(tree) - len(kept)  # every row fed, the kept ones counted by take_verified
            return state
        state.stream, logits = prefill_stream(model, prefix_ids, room=max_tokens + 1, draft=draft)
        if draft:
            state.take_verified(draft, greedy_tokens(logits, tok))
        else:
            state.advance(logits)  # the prefill's pass writes the first token
        return state

    @property
    def done(self) -> bool:
        return self.result is not None

    def advance(self, logits: torch.Tensor) -> None:
        """Take the next token from this request's (V,) logits and decide whether to stop."""
        self.take(int(greedy_tokens(logits.unsqueeze(0), self.tok)[0]))

    def take(self, token: int) -> None:
        """Append the token chosen for this request and decide whether to stop."""
        self.forwards += 1
        self._append(token)

    def draft(self) -> list[int]:
        """The draft to feed after `next_token` in this request's next pass ([] without
        drafts): no longer than the tokens it may still write, less the one every pass
        writes anyway."""
        if self.drafts is None:
            return []
        return self.drafts.draft(self.tok, self.generated, self.max_tokens - len(self.generated) - 1)

    def take_verified(self, draft: Sequence[int], predictions: Sequence[int]) -> None:
        """One pass fed [next_token] + draft and predicted `predictions` (1 + len(draft)
        greedy tokens, row j's after the draft's first j): keep the draft's longest start
        that equals the predictions and the model's token after it, drop the rejected draft
        rows from the stream, and decide whether to stop after each kept token (the same
        stops as one token per pass: the text is the greedy decode's)."""
        kept = 0
        while kept < len(draft) and draft[kept] == predictions[kept]:
            kept += 1
        self.stream.length -= len(draft) - kept
        self.drafted += len(draft)
        self.accepted += kept
        self.forwards += 1
        for token in predictions[: kept + 1]:
            self._append(token)
            if self.done:
                return

    def _append(self, token: int) -> None:
        self.generated.append(token)
        self.next_token = token
        text = self.tok.decode(self.generated)
        if "\n" in self.tok.piece(token):
            finished = [line.strip() for line in text.split("\n")[:-1]]  # complete lines
            if self.stop_line in finished:
                self._stop_after(finished.index(self.stop_line), text, "suffix")
            elif self.lines and len(finished) >= self.lines:
                self._stop_after(self.lines, text, "lines")
            if self.done:
                return
        if len(self.generated) >= self.max_tokens:
            self.result = DecodeResult(text, len(self.generated), self.forwards, "max_tokens")

    def _stop_after(self, lines: int, text: str, reason: str) -> None:
        """End the middle after its first `lines` lines (their newlines included)."""
        middle = "".join(line + "\n" for line in text.split("\n")[:lines])
        tokens = len(self.generated) if middle == text else len(self.tok.encode(middle))
        self.result = DecodeResult(middle, tokens, self.forwards, reason)


def greedy_tokens(logits: torch.Tensor, tok: Tokenizer) -> list[int]:
    """The most likely text token of each row of (B, V) logits, in one device-to-host copy
    (special tokens excluded: the prefix stream never saw mask, EOM or BOS as text)."""
    rows = logits.float().clone()
    rows[:, sorted(tok.special_ids)] = float("-inf")
    return rows.argmax(dim=-1).tolist()


class DecodeBatch:
    """Continuous batching of greedy decodes: requests `join`, every `step` is one forward
    pass over all unfinished ones, and a request leaves the moment it stops."""

    def __init__(self, model: InfillTransformer):
        self.model = model
        self.active: list[GreedyDecode] = []
        self.passes = 0

    def join(self, state: GreedyDecode) -> None:
        if not state.done:
            self.active.append(state)

    def step(self) -> list[GreedyDecode]:
        """One pass for every active request (one token each, or with drafts the verified
        draft and one token more); returns the ones that stopped."""
        if not self.active:
            return []
        drafts = [s.draft() for s in self.active]
        tok = self.active[0].tok
        if not any(drafts):  # one row per request: the plain step
            logits = next_token_logits(self.model, [s.stream for s in self.active], torch.tensor([s.next_token for s in self.active]))  # (B, V)
            for state, token in zip(self.active, greedy_tokens(logits, tok)):
                state.take(token)
        else:
            rows = [[s.next_token] + d for s, d in zip(self.active, drafts)]
            predictions = greedy_tokens(verify_logits(self.model, [s.stream for s in self.active], rows), tok)  # one host copy
            start = 0
            for state, draft in zip(self.active, drafts):
                state.take_verified(draft, predictions[start : start + 1 + len(draft)])
                start += 1 + len(draft)
        self.passes += 1
        finished = [s for s in self.active if s.done]
        self.active = [s for s in self.active if not s.done]
        return finished


def decode_many(model: InfillTransformer, tok: Tokenizer, contexts: Sequence[EncodedContext], suffixes: Sequence[str], max_tokens: int = 64, lines: int = 1, drafts: Optional[Sequence[Optional[CopyDrafts]]] = None) -> list[DecodeResult]:
    """Greedy-decode every request together, one batched pass per token (or verified
    draft, with drafts[i] for request i), each leaving the batch when it stops.
    contexts[i] must hold request i's prefix (its suffix is unused)."""
    start = time.perf_counter()
    drafts = drafts if drafts is not None else [None] * len(contexts)
    states = [GreedyDecode.start(model, tok, c, s, max_tokens, lines, d) for c, s, d in zip(contexts, suffixes, drafts, strict=True)]
    batch = DecodeBatch(model)
    for state in states:
        batch.join(state)
    while batch.active:
        batch.step()
    ms = (time.perf_counter() - start) * 1000
    results = []
    for state in states:
        assert state.result is not None
        state.result.ms = ms
        results.append(state.result)
    return results
