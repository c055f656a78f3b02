"""The Engine: one loaded model behind the small typed surface front ends use.

    eng = engine.load()                      # the embedded model
    result = eng.infill(prefix, suffix, language="python")
    for step in eng.stream(prefix, suffix): ...

Requests are serialized by a lock (one model, one forward at a time); the context cache
of the previous request is kept so that a keystroke re-encodes only what changed.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import asdict
from pathlib import Path
from typing import Any, Hashable, Iterator, Optional

import torch

from engine.modeldir import load_infill_model, load_tokenizer, read_config
from engine.sampler import Denoiser, run_to_end
from engine.tokenizer import Tokenizer
from engine.types import DenoiseStep, DenoisingModel, InfillError, InfillResult, SamplerSettings, SyntaxConstraint

DEFAULT_MODEL_DIR = Path(__file__).resolve().parent / "default_model"
MAX_INPUT_CHARS = 4_000_000  # a request larger than this is refused (prefix + suffix)
CHARS_PER_TOKEN_BUDGET = 3.4  # measured on the corpus's validation split (chars per token)
CUT_GRID = 256
KEYED_CONTEXT_BYTES = 256 * 2**20  # memory for keyed requests' contexts (the embedded model: ~4 MB each)
KEYED_CONTEXTS = 4096  # and at most this many (for caches that do not report their size)
SMALL_MODEL_PARAMETERS = 50_000_000  # the prefix window's left edge moves in steps of this many chars (cache reuse)


def _constraint_for(language: Optional[str]) -> Optional[SyntaxConstraint]:
    if not language:
        return None
    try:
        import grammars
    except ImportError:  # grammars is part of the package; this guards partial installs
        return None
    try:
        return grammars.constraint_for(language)
    except Exception:
        return None


MAX_WORD_CUTS = 16  # mid-line cuts tried (longest first) when no whole-line form is accepted


def accepted_cut(constraint: SyntaxConstraint, prefix: str, middle: str, suffix: str) -> Optional[str]:
    """The longest acceptable form of a middle: the polished middle itself, else the
    polished middle cut after one of its line ends (longest first), else its first line
    cut after a word or closing bracket (`x.size() > 0 and foo(` -> `x.size() > 0`).
    Cutting costs parses, not model passes; a first line that runs on past its statement
    is common, and the text before the break is often right. None when nothing non-empty
    is acceptable (whitespace or an empty comment alone is not a suggestion)."""
    polished = constraint.polish(prefix, middle, suffix)
    if shows_something(polished) and constraint.accept_final(prefix, polished, suffix):
        return polished
    tried = {polished}
    ends = [i + 1 for i, ch in enumerate(middle) if ch == "\n"]
    for end in reversed(ends):
        cut = constraint.polish(prefix, middle[:end], suffix)
        if shows_something(cut) and cut not in tried and constraint.accept_final(prefix, cut, suffix):
            return cut
        tried.add(cut)
    first_line = middle[: ends[0]] if ends else middle
    for end in reversed(word_ends(first_line)[-MAX_WORD_CUTS:]):
        cut = constraint.polish(prefix, first_line[:end], suffix)
        if shows_something(cut) and cut not in tried and constraint.accept_final(prefix, cut, suffix):
            return cut
        tried.add(cut)
    return None


def shows_something(middle: str) -> bool:
    """Whether a middle is worth showing: not whitespace alone, nor an empty comment
    (`#`, `//`: the weakest candidate's fallback when it has nothing to say)."""
    return bool(middle.strip().strip("#/").strip())


def word_ends(line: str) -> list[int]:
    """Offsets just after a word, number, closing bracket or quote that is followed by
    something else: the places a line can end without splitting a token."""
    def word(ch: str) -> bool:
        return ch.isalnum() or ch == "_"

    ends = []
    for i in range(1, len(line)):
        before, after = line[i - 1], line[i]
        if (word(before) and not word(after)) or (before in ")]}\"'`" and after != before):
            ends.append(i)
    return ends


def prefix_window(prefix: str, max_tokens: int) -> str:
    """The tail of the prefix given to the model, cut at a line start.

    The cut moves in steps of CUT_GRID chars, so while the user types the window's left
    edge stays put and the cached keys/values of the prefix stay valid."""
    budget = int(max_tokens * CHARS_PER_TOKEN_BUDGET)
    if len(prefix) <= budget:
        return prefix
    target = len(prefix) - budget
    target = (target // CUT_GRID + 1) * CUT_GRID
    line_start = prefix.find("\n", target)
    return prefix[line_start + 1 :] if line_start != -1 else prefix[target:]


def suffix_window(suffix: str, max_tokens: int) -> str:
    budget = int(max_tokens * CHARS_PER_TOKEN_BUDGET)
    if len(suffix) <= budget:
        return suffix
    line_end = suffix.rfind("\n", 0, budget)
    return suffix[: line_end + 1] if line_end > 0 else suffix[:budget]


class Engine:
    def __init__(self, model: DenoisingModel, tokenizer: Tokenizer, *, model_dir: Optional[Path] = None, name: str = "infill", info: Optional[dict[str, Any]] = None, device: str = "cpu"):
        self.model = model
        self.tokenizer = tokenizer
        self.model_dir = model_dir
        self.model_name = name
        self.info = info or {}
        self.device = device
        self.settings = SamplerSettings()
        self._lock = threading.Lock()
        self._context_cache: object = None  # the last request's context
        self._last_encoded: Optional[tuple[str, list[int]]] = None  # see _encode_text
        # Contexts of keyed requests (a live session, an editor's document), least recently
        # used first, each with its size: many users at once each keep their own cache.
        self._keyed_contexts: OrderedDict[Hashable, tuple[object, int]] = OrderedDict()
        self._keyed_bytes = 0

    # ------------------------------------------------------------------ requests
    def _check(self, prefix: object, suffix: object) -> None:
        if not isinstance(prefix, str) or not isinstance(suffix, str):
            raise InfillError("prefix and suffix must be text (str)")
        if not prefix.strip() and not suffix.strip():
            raise InfillError("nothing to complete around: prefix and suffix are both empty")
        if len(prefix) + len(suffix) > MAX_INPUT_CHARS:
            raise InfillError(f"input too large: {len(prefix) + len(suffix):,} characters (limit {MAX_INPUT_CHARS:,})")
        if "\x00" in prefix[-4096:] or "\x00" in suffix[:4096]:
            raise InfillError("input looks binary (NUL bytes near the cursor); refusing to complete it")

    def _tokens(self, prefix: str, suffix: str, settings: SamplerSettings) -> tuple[list[int], list[int], str, str]:
        tok = self.tokenizer
        p_text = prefix_window(prefix, settings.context_tokens)
        s_text = suffix_window(suffix, settings.suffix_tokens)
        prefix_ids = self._encode_text(p_text)[-max(0, settings.context_tokens - 1) :] if settings.context_tokens > 1 else []
        if tok.bos_id is not None:
            prefix_ids = [tok.bos_id] + prefix_ids
        suffix_ids = tok.encode(s_text)[: settings.suffix_tokens]
        return prefix_ids, suffix_ids, p_text, s_text

    def _copy_source(self, prefix: str, prefix_ids: list[int], settings: SamplerSettings) -> list[int]:
        """The tokens the copy rule looks in: a longer stretch of the prefix than the
        model's window when `copy_context_tokens` asks for one (it costs a tokenizer call,
        not model time)."""
        if settings.copy_weight <= 0:
            return []
        if settings.copy_context_tokens <= settings.context_tokens:
            return prefix_ids
        return self._encode_text(prefix_window(prefix, settings.copy_context_tokens))[-settings.copy_context_tokens :]

    def _encode_text(self, text: str) -> list[int]:
        """tokenizer.encode, remembering the last text: when the whole prefix fits the
        model's window, the copy rule's longer window is the same text (one call, not two)."""
        last = self._last_encoded
        if last is not None and last[0] == text:
            return last[1]
        ids = self.tokenizer.encode(text)
        self._last_encoded = (text, ids)
        return ids

    def job(self, prefix: str, suffix: str, language: Optional[str] = None, cancel: Optional[threading.Event] = None, *, cache_key: Optional[Hashable] = None, **settings: Any) -> "InfillJob":
        """A checked request, ready to be run alone (`stream`) or with others (engine/batching.py).

        `cache_key` names whose request this is (a live session, an editor's document):
        its context is encoded reusing the cache of that key's previous request, so many
        users typing at once each re-encode only what they typed."""
        self._check(prefix, suffix)
        cfg = self.settings.replace(**settings)
        if cfg.max_tokens < 0 or cfg.block_size < 1 or not (0.0 <= cfg.confidence_threshold <= 1.0):
            raise InfillError("max_tokens must be >= 0, block_size >= 1 and confidence_threshold in [0, 1]")
        return InfillJob(self, prefix, suffix, _constraint_for(language) if cfg.constrained else None, cfg, cancel, cache_key)

    def stream(self, prefix: str, suffix: str, language: Optional[str] = None, cancel: Optional[threading.Event] = None, **settings: Any) -> Iterator[DenoiseStep]:
        """Yield every denoising step; the last one carries the InfillResult (see InfillJob)."""
        job = self.job(prefix, suffix, language, cancel, **settings)
        with self._lock:
            job.prepare()
            while (ids := job.canvas_ids()) is not None:
                yield job.advance(self.model.canvas_logits(job.context, torch.tensor([ids], dtype=torch.long, device=self.device))[0])
            yield job.final_step()

    def infill(self, prefix: str, suffix: str, language: Optional[str] = None, cancel: Optional[threading.Event] = None, **settings: Any) -> InfillResult:
        return run_to_end(self.stream(prefix, suffix, language, cancel, **settings))

    def _encode(self, prefix_ids: list[int], suffix_ids: list[int], key: Optional[Hashable] = None) -> tuple[object, int]:
        """Encode the context, reusing where exact the cache of the request with the same
        `key` (else the previous request's). Returns (cache, number of context tokens that
        came from the cache)."""
        old = self._context_cache
        if key is not None and key in self._keyed_contexts:
            old = self._keyed_contexts[key][0]
        reused = 0
        if old is not None and hasattr(old, "prefix_ids"):
            limit = min(len(old.prefix_ids), len(prefix_ids))
            while reused < limit and old.prefix_ids[reused] == prefix_ids[reused]:
                reused += 1
            if old.suffix_ids == suffix_ids:
                reused += len(suffix_ids)
        context = self.model.encode_context(prefix_ids, suffix_ids, reuse=old)
        self._context_cache = context
        if key is not None:
            self._keep_context(key, context)
        return context, reused

    def _keep_context(self, key: Hashable, context: object) -> None:
        """Remember a keyed request's context, forgetting the least recently used ones
        beyond KEYED_CONTEXT_BYTES (or KEYED_CONTEXTS entries)."""
        if key in self._keyed_contexts:
            self._keyed_bytes -= self._keyed_contexts.pop(key)[1]
        size = int(getattr(context, "nbytes", 0))
        self._keyed_contexts[key] = (context, size)
        self._keyed_bytes += size
        while len(self._keyed_contexts) > 1 and (self._keyed_bytes > KEYED_CONTEXT_BYTES or len(self._keyed_contexts) > KEYED_CONTEXTS):
            self._keyed_bytes -= self._keyed_contexts.popitem(last=False)[1][1]

    def describe(self) -> dict[str, Any]:
        return {"model": self.model_name, "model_dir": str(self.model_dir) if self.model_dir else None, "device": self.device, "settings": asdict(self.settings), **self.info}


class InfillJob:
    """One request through the engine, a pass at a time, with the forward pass left to the
    caller (like sampler.Denoiser, whose steps it forwards): `prepare()` encodes the
    context, `canvas_ids()` is the canvas for the next pass (None when done),
    `advance(logits)` applies a pass, `final_step()` carries the InfillResult. Engine.stream
    runs one job alone; the batch worker runs many with one forward per pass.

    Candidates: if the syntax constraint's final check refuses a middle (and every cut of
    it, see accepted_cut), the canvas is denoised again left to right, one token per pass,
    stopping at the first complete, valid middle; if that is refused too the result is an
    empty middle. (A plain left-to-right candidate in between was measured: it rescued 2
    of 21 refused middles and cost 40% more time per infill, docs/grammars.md.)
    """

    def __init__(self, engine: "Engine", prefix: str, suffix: str, constraint: Optional[SyntaxConstraint], settings: SamplerSettings, cancel: Optional[threading.Event], cache_key: Optional[Hashable] = None):
        self.engine, self.prefix, self.suffix, self.constraint, self.cancel = engine, prefix, suffix, constraint, cancel
        self.cache_key = cache_key
        self.schedule = [settings] if constraint is None else [
            settings,
            settings.replace(left_to_right=True, end_when_valid=True, max_edit_passes=0),
        ][: max(1, settings.candidates)]
        self.context: object = None
        self.result: Optional[InfillResult] = None
        self._attempt = 0
        self._denoiser: Optional[Denoiser] = None
        self._last: Optional[DenoiseStep] = None
        self._sampled_middle = ""

    def prepare(self) -> None:
        """Tokenize and encode the context (reusing the engine's cache where exact)."""
        self.start = time.perf_counter()
        cfg = self.schedule[0]
        prefix_ids, suffix_ids, _, _ = self.engine._tokens(self.prefix, self.suffix, cfg)
        self.copy_source = self.engine._copy_source(self.prefix, prefix_ids, cfg)
        self.context, self.reused = self.engine._encode(prefix_ids, suffix_ids, self.cache_key)
        self._start_candidate(1 if self.reused < len(prefix_ids) + len(suffix_ids) else 0)

    def canvas_ids(self) -> Optional[list[int]]:
        while self._denoiser is not None:
            ids = self._denoiser.canvas_ids()
            if ids is not None:
                return ids
            self._end_candidate()
        return None

    def advance(self, logits: torch.Tensor) -> DenoiseStep:
        assert self._denoiser is not None, "advance() after the job finished"
        return self._denoiser.advance(logits)

    def final_step(self) -> DenoiseStep:
        result, last = self.result, self._last
        assert result is not None and last is not None, "final_step() before the job finished"
        release = getattr(self.context, "release_scratch", None)
        if release is not None:  # a kept context should not hold a batched pass's buffers
            release()
        result.candidates_tried = self._attempt
        result.cached_context_tokens = self.reused
        result.ms = (time.perf_counter() - self.start) * 1000
        if result.middle != self._sampled_middle:  # the syntax check cut or polished it: count what is returned
            result.tokens = min(result.tokens, len(self.engine.tokenizer.encode(result.middle))) if result.middle else 0
        return DenoiseStep(last.step, last.canvas, [], result.forwards, result.ms, result=result)

    def _start_candidate(self, forwards_before: int) -> None:
        self._attempt += 1
        cfg = self.schedule[self._attempt - 1]
        self._denoiser = Denoiser(self.engine.tokenizer, cfg, constraint=self.constraint, prefix_text=self.prefix, suffix_text=self.suffix, cancel=self.cancel, start_time=self.start, forwards_before=forwards_before, copy_source=self.copy_source)

    def _end_candidate(self) -> None:
        """Judge the finished candidate's middle: keep it (or its accepted cut), or start
        the next candidate, or give up with an empty middle."""
        assert self._denoiser is not None
        self._last = self._denoiser.final_step()
        result = self.result = self._last.result
        assert result is not None
        self._sampled_middle, self._denoiser = result.middle, None
        if result.stop_reason == "cancelled" or self.constraint is None:
            return
        accepted = accepted_cut(self.constraint, self.prefix, result.middle, self.suffix)
        if accepted is not None:
            result.middle = accepted
            return
        result.vetoed += 1
        if self._attempt < len(self.schedule):
            self._start_candidate(result.forwards)
        else:
            result.middle, result.stop_reason = "", "rejected"


def _is_infill_dir(config: dict[str, Any]) -> bool:
    return config.get("format") == "infill" or "model" in config and isinstance(config.get("model"), dict)


def _set_threads(threads: Optional[int], parameters: int) -> None:
    """A canvas pass of a small model is a few small matmuls: one thread is as fast as
    two and never suffers OpenMP oversubscription when the editor, the server and
    other processes share the cores (measured: a tiny model's pass took ~1 s with 2
    threads next to a busy process, ~10 ms with 1). Large models get every core."""
    if threads is None:
        threads = 1 if parameters < SMALL_MODEL_PARAMETERS else 0
    if threads > 0:
        torch.set_num_threads(threads)


def load(
    model_dir: Optional[str | Path] = None,
    device: str = "cpu",
    threads: Optional[int] = None,
    *,
    dtype: Optional[str] = None,
    quantization: Optional[str] = None,
    cache_policy: Optional[str] = None,
) -> Engine:
    """Load a model directory (default: the embedded model) into an Engine.

    infill's own directories and the open checkpoint families (engine.families) both
    work; every problem is an InfillError with a one-line message. `dtype`,
    `quantization` (e.g. "nf4", "int8") and `cache_policy` apply to family checkpoints;
    infill's own directories carry their quantization in config.json."""
    path = Path(model_dir).expanduser() if model_dir is not None else DEFAULT_MODEL_DIR
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise InfillError(f"device {device!r} requested but no CUDA GPU is available; use --device cpu")
    config = read_config(path)
    if _is_infill_dir(config):
        tokenizer = load_tokenizer(path)
        model = load_infill_model(path, config, device=device)
        if tokenizer.vocab_size > model.cfg.vocab_size:
            raise InfillError(f"{path}: tokenizer has {tokenizer.vocab_size} tokens but the model only {model.cfg.vocab_size}")
        info = {"parameters": model.num_parameters(), "training": config.get("training", {}), "quantization": config.get("quantization")}
        name = config.get("name") or ("infill-default" if path == DEFAULT_MODEL_DIR else path.name)
        _set_threads(threads, model.num_parameters())
        engine = Engine(model, tokenizer, model_dir=path, name=name, info=info, device=device)
        # The context windows the model was trained on: longer ones were measured to be
        # slower and no better (docs/sampler.md); a model dir's "sampler" entry overrides.
        data = config.get("training", {}).get("data", {})
        trained = {"context_tokens": data.get("prefix_tokens"), "suffix_tokens": data.get("suffix_tokens")}
        engine.settings = engine.settings.replace(**{k: v for k, v in trained.items() if isinstance(v, int) and v > 0})
        defaults = config.get("sampler")
        if isinstance(defaults, dict):
            engine.settings = engine.settings.replace(**defaults)
        return engine
    from engine import families

    model, tokenizer, info = families.load_family_model(path, device=device, dtype=dtype, quantization=quantization, cache_policy=cache_policy)
    _set_threads(threads, sum(p.numel() for p in model.parameters()) if hasattr(model, "parameters") else SMALL_MODEL_PARAMETERS)
    return Engine(model, tokenizer, model_dir=path, name=info.get("family", path.name), info=info, device=device)
