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
from dataclasses import asdict
from pathlib import Path
from typing import Any, Iterator, Optional

import torch

from engine.modeldir import load_infill_model, load_tokenizer, read_config
from engine.sampler import denoise, run_to_end
from engine.tokenizer import Tokenizer, replace_lone_surrogates
from engine.types import DenoiseStep, DenoisingModel, InfillError, InfillResult, SamplerSettings, SyntaxConstraint

DEFAULT_MODEL_DIR = Path(__file__).resolve().parent / "default_model"
MAX_INPUT_CHARS = 4_000_000  # a request larger than this is refused (prefix + suffix)
CHARS_PER_TOKEN_BUDGET = 3.4  # measured on the corpus's validation split (chars per token)
CUT_GRID = 256
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
        self._context_cache: object = None

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
        prefix_ids = tok.encode(p_text)[-max(0, settings.context_tokens - 1) :] if settings.context_tokens > 1 else []
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
        return self.tokenizer.encode(prefix_window(prefix, settings.copy_context_tokens))[-settings.copy_context_tokens :]

    def stream(self, prefix: str, suffix: str, language: Optional[str] = None, cancel: Optional[threading.Event] = None, **settings: Any) -> Iterator[DenoiseStep]:
        """Yield every denoising step; the last one carries the InfillResult.

        Candidates: if the syntax constraint's final check refuses a middle (and every cut
        of it, see accepted_cut), the canvas is denoised again left to right, one token
        per pass, stopping at the first complete, valid middle; if that is refused too
        the result is an empty middle."""
        self._check(prefix, suffix)
        prefix, suffix = replace_lone_surrogates(prefix), replace_lone_surrogates(suffix)
        cfg = self.settings.replace(**settings)
        if cfg.max_tokens < 0 or cfg.block_size < 1 or not (0.0 <= cfg.confidence_threshold <= 1.0):
            raise InfillError("max_tokens must be >= 0, block_size >= 1 and confidence_threshold in [0, 1]")
        constraint = _constraint_for(language) if cfg.constrained else None
        with self._lock:
            start = time.perf_counter()
            prefix_ids, suffix_ids, _, _ = self._tokens(prefix, suffix, cfg)
            copy_source = self._copy_source(prefix, prefix_ids, cfg)
            context, reused = self._encode(prefix_ids, suffix_ids)
            forwards = 1 if reused < len(prefix_ids) + len(suffix_ids) else 0
            # Model candidates: the request's settings, then a last resort written left to
            # right that ends at the first complete, valid middle the model proposes (often
            # one identifier for a condition): a short answer rather than none. A plain
            # left-to-right candidate in between was measured: it rescued 2 of 21 refused
            # middles and cost 40% more time per infill (docs/grammars.md).
            schedule = [cfg] if constraint is None else [
                cfg,
                cfg.replace(left_to_right=True, end_when_valid=True, max_edit_passes=0),
            ][: max(1, cfg.candidates)]
            result: Optional[InfillResult] = None
            final: Optional[DenoiseStep] = None
            sampled_middle = ""
            attempt = 0
            for attempt, attempt_cfg in enumerate(schedule, start=1):
                for step in denoise(self.model, self.tokenizer, context, attempt_cfg, constraint=constraint, prefix_text=prefix, suffix_text=suffix, cancel=cancel, start_time=start, forwards_before=forwards, device=self.device, copy_source=copy_source):
                    if step.result is None:
                        yield step
                    else:
                        final = step
                assert final is not None and final.result is not None
                result = final.result
                sampled_middle = result.middle
                forwards = result.forwards
                if result.stop_reason == "cancelled" or constraint is None:
                    break
                accepted = accepted_cut(constraint, prefix, result.middle, suffix)
                if accepted is not None:
                    result.middle = accepted
                    break
                result.vetoed += 1
            else:
                assert result is not None
                result.middle = ""
                result.stop_reason = "rejected"
            assert result is not None
            result.candidates_tried = attempt
            result.cached_context_tokens = reused
            result.ms = (time.perf_counter() - start) * 1000
            if result.middle != sampled_middle:  # the syntax check cut or polished it: count what is returned
                result.tokens = min(result.tokens, len(self.tokenizer.encode(result.middle))) if result.middle else 0
            yield DenoiseStep(final.step if final else 0, final.canvas if final else [], [], result.forwards, result.ms, result=result)

    def infill(self, prefix: str, suffix: str, language: Optional[str] = None, cancel: Optional[threading.Event] = None, **settings: Any) -> InfillResult:
        return run_to_end(self.stream(prefix, suffix, language, cancel, **settings))

    def _encode(self, prefix_ids: list[int], suffix_ids: list[int]) -> tuple[object, int]:
        """Encode the context, reusing the previous request's cache where exact.
        Returns (cache, number of context tokens that came from the cache)."""
        old = self._context_cache
        reused = 0
        if old is not None and hasattr(old, "prefix_ids"):
            limit = min(len(old.prefix_ids), len(prefix_ids))
            while reused < limit and old.prefix_ids[reused] == prefix_ids[reused]:
                reused += 1
            if old.suffix_ids == suffix_ids:
                reused += len(suffix_ids)
        context = self.model.encode_context(prefix_ids, suffix_ids, reuse=old)
        self._context_cache = context
        return context, reused

    def describe(self) -> dict[str, Any]:
        return {"model": self.model_name, "model_dir": str(self.model_dir) if self.model_dir else None, "device": self.device, "settings": asdict(self.settings), **self.info}


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
