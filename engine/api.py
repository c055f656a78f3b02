"""The Engine: one loaded model behind the small typed surface front ends use.

    eng = engine.load()                      # the embedded model
    result = eng.infill(prefix, suffix, language="python")
    for step in eng.stream(prefix, suffix): ...

Requests are serialized by a lock (one model, one forward at a time); the context cache
of the previous request is kept so that a keystroke re-encodes only what changed. Which
text the model sees is decided here, from the model's trained window (engine/context_window.py):
front ends pass the whole text around the cursor, and context from other files apart.
"""
from __future__ import annotations

import os
import threading
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Hashable, Iterator, Optional

import torch

import grammars
from engine.context_cache import ContextCache
from engine.context_window import ContextWindow, context_window, prefix_tail
from engine.job import InfillJob
from engine.language import resolve_language
from engine.modeldir import load_infill_model, load_tokenizer, read_config
from engine.next_edit.suggest import NextEditResult, next_edit
from engine.precision import bucket_rows, compute_dtype
from engine.sampler import run_to_end
from engine.tokenizer import Tokenizer, replace_lone_surrogates
from engine.types import DenoiseStep, DenoisingModel, InfillError, InfillResult, ModuleKindConstraint, OwnPromptLayout, SamplerSettings, SeveralCanvases, SyntaxConstraint
from engine.workspace.retrieve import WorkspaceContext
from engine.workspace.snippets import draft_context

DEFAULT_MODEL_DIR = Path(__file__).resolve().parent / "default_model"
MAX_INPUT_CHARS = 4_000_000  # a request larger than this is refused (prefix + suffix)
SMALL_MODEL_PARAMETERS = 50_000_000  # below this many parameters one torch thread is as fast as two


def constraint_for(language: Optional[str]) -> Optional[SyntaxConstraint]:
    """The syntax constraint of a language: None for no language or one without a
    grammar. A failure to build one (a grammar bug, a broken grammar wheel) is raised,
    not hidden: commits silently left unconstrained are how such bugs go unnoticed."""
    if not language:
        return None
    return grammars.constraint_for(language)


def file_constraint(language: Optional[str], filename: Optional[str], workspace: Optional[WorkspaceContext]) -> Optional[SyntaxConstraint]:
    """The syntax constraint of a request: its language's (`constraint_for`), judging a
    JavaScript file as Node loads it where the file's name or package says how
    (`module_kind_of`; elsewhere the constraint reads it from the text)."""
    constraint = constraint_for(language)
    kind = module_kind_of(language, filename, workspace)
    if kind is not None and isinstance(constraint, ModuleKindConstraint):
        return constraint.for_module_kind(kind)
    return constraint


def module_kind_of(language: Optional[str], filename: Optional[str], workspace: Optional[WorkspaceContext]) -> Optional[str]:
    """How Node loads the JavaScript file being edited, where its name (`.mjs`, `.cjs`) or
    its package says it (the nearest package.json's "type": only a workspace index reads
    one, inside its own folder, so a request without an index, an HTTP client's, opens no
    file by the name it sends); None elsewhere: the constraint reads the kind from the
    text (grammars/early_errors.py)."""
    if language != "javascript" or not filename:
        return None
    package_type = workspace.package_type(filename) if workspace is not None else None
    return grammars.declared_module_kind(filename, package_type)


# Drafted canvases computed beside each pass (engine/lookahead.py): at most this many. On
# this CPU a forward of 2 canvases of 8 rows costs ~1.25x one, of 4 ~1.9x (the weights
# are read once); on the dev lines width 3 spent 43% fewer forwards than none, for ~4% more
# CPU time per request (docs/sampler.md, "Draft and verify").
LOOKAHEAD_WIDTH = 3
LOOKAHEAD_WIDTH_GPU = 6  # every source's whole chain (engine/lookahead.py); not measured on a GPU here


def lookahead_width(device: str = "cpu") -> int:
    """The INFILL_LOOKAHEAD_WIDTH environment variable (0 turns drafted canvases off), else
    LOOKAHEAD_WIDTH on a CPU and LOOKAHEAD_WIDTH_GPU on a GPU, where a forward's extra rows
    cost next to nothing."""
    text = os.environ.get("INFILL_LOOKAHEAD_WIDTH", "").strip()
    if not text:
        return LOOKAHEAD_WIDTH if str(device).startswith("cpu") else LOOKAHEAD_WIDTH_GPU
    try:
        width = int(text)
    except ValueError:
        width = -1
    if not 0 <= width <= 16:
        raise InfillError(f"INFILL_LOOKAHEAD_WIDTH must be a whole number from 0 to 16, not {text!r}")
    return width


class Engine:
    def __init__(self, model: DenoisingModel, tokenizer: Tokenizer, *, model_dir: Optional[Path] = None, name: str = "infill", info: Optional[dict[str, Any]] = None, device: str = "cpu"):
        self.model = model
        self.tokenizer = tokenizer
        self.model_dir = model_dir
        self.model_name = name
        self.info = info or {}
        self.device = device
        self.settings = SamplerSettings()
        self.lock = threading.Lock()  # one model, one forward at a time: every request and batched pass holds it
        self.contexts = ContextCache()  # encoded contexts kept for reuse (the last one, and keyed requests')
        # Drafted canvases computed beside each solo pass (engine/lookahead.py); only for
        # models whose canvas_logits takes several canvases over one context.
        self.lookahead_width = lookahead_width(device) if isinstance(model, SeveralCanvases) else 0
        self._last_encoded: Optional[tuple[str, list[int]]] = None  # see _encode_text

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

    def window(self, prefix: str, suffix: str, cross_file: str = "", settings: Optional[SamplerSettings] = None) -> ContextWindow:
        """The text around the cursor the model sees (engine/window.py decides)."""
        cfg = settings or self.settings
        return context_window(prefix, suffix, prefix_tokens=cfg.context_tokens, suffix_tokens=cfg.suffix_tokens, cross_file=cross_file, cross_file_share=cfg.cross_file_share)

    def context_ids(self, prefix: str, suffix: str, cross_file: str = "", settings: Optional[SamplerSettings] = None) -> tuple[list[int], list[int]]:
        """(prefix ids, suffix ids) of the window, as the model reads them: BOS (when the
        tokenizer has one and the model does not lay out its own prompt, as the checkpoint
        families' adapters do), the cross-file context, then the tail of the prefix."""
        cfg = settings or self.settings
        tok = self.tokenizer
        window = self.window(prefix, suffix, cross_file, cfg)
        room = max(0, cfg.context_tokens - 1)
        cross_ids = tok.encode(window.cross_file)[: int(room * cfg.cross_file_share)] if window.cross_file else []
        keep = room - len(cross_ids)
        prefix_ids = cross_ids + (self._encode_text(window.prefix)[-keep:] if keep > 0 else [])
        if tok.bos_id is not None and not isinstance(self.model, OwnPromptLayout):
            prefix_ids = [tok.bos_id] + prefix_ids  # family adapters add their own layout's tokens
        return prefix_ids, tok.encode(window.suffix)[: cfg.suffix_tokens]

    def copy_source(self, prefix: str, prefix_ids: list[int], settings: SamplerSettings) -> list[int]:
        """The tokens the copy rule looks in: a longer stretch of the prefix than the
        model's window when `copy_context_tokens` asks for one (it costs a tokenizer call,
        not model time)."""
        if settings.copy_weight <= 0:
            return []
        if settings.copy_context_tokens <= settings.context_tokens:
            return prefix_ids
        return self._encode_text(prefix_tail(prefix, settings.copy_context_tokens))[-settings.copy_context_tokens :]

    def _encode_text(self, text: str) -> list[int]:
        """tokenizer.encode, remembering the last text: when the whole prefix fits the
        model's window, the copy rule's longer window is the same text (one call, not two)."""
        last = self._last_encoded
        if last is not None and last[0] == text:
            return last[1]
        ids = self.tokenizer.encode(text)
        self._last_encoded = (text, ids)
        return ids

    def job(self, prefix: str, suffix: str, language: Optional[str] = None, cancel: Optional[threading.Event] = None, *, cross_file: str = "", cache_key: Optional[Hashable] = None, filename: Optional[str] = None, detect_language: bool = False, workspace: Optional[WorkspaceContext] = None, **settings: Any) -> InfillJob:
        """A checked request (input, settings and syntax constraint), ready to run alone
        (`stream`) or with others (engine/batching.py). `cache_key` names whose request it
        is (a live session, an editor's document): its context is encoded reusing the
        cache of that key's previous request, so many users at once each re-encode only
        what they typed. The language: `language` (an unknown one is an InfillError),
        else `filename`'s extension, else detected when `detect_language` (engine/language.py).
        `workspace`: the index and unsaved texts the request's drafts come from (engine/drafts.py)."""
        self._check(prefix, suffix)
        # A lone surrogate (JSON allows "\udc80") would make the tokenizer raise TypeError.
        prefix, suffix = replace_lone_surrogates(prefix), replace_lone_surrogates(suffix)
        cross_file = replace_lone_surrogates(cross_file)
        cfg = self.settings.replace(**settings)
        # Unconstrained, a detected language would change nothing: detection is skipped.
        choice = resolve_language(language, filename=filename, prefix=prefix, suffix=suffix, detect=detect_language and cfg.constrained)
        constraint = file_constraint(choice.name, filename, workspace) if cfg.constrained else None
        drafts = workspace.drafts(prefix, suffix, filename) if workspace is not None and cfg.workspace_drafts and cfg.max_tokens > 0 else []
        # Other open documents' texts come as the client sent them: lone surrogates too.
        drafts = [replace(d, text=replace_lone_surrogates(d.text), line=replace_lone_surrogates(d.line)) for d in drafts]
        if drafts and cfg.draft_context and workspace is not None:
            cross_file = draft_context(drafts, workspace.index, prefix, suffix, self.tokenizer) + cross_file
        copy_table = None
        if workspace is not None and cfg.workspace_copy and cfg.copy_weight > 0 and cfg.max_tokens > 0:
            copy_table = workspace.ngrams(self.tokenizer)
        return InfillJob(self, prefix, suffix, cfg, constraint, cancel, cross_file, cache_key, choice, drafts, copy_table)

    def stream(self, prefix: str, suffix: str, language: Optional[str] = None, cancel: Optional[threading.Event] = None, *, cross_file: str = "", cache_key: Optional[Hashable] = None, filename: Optional[str] = None, detect_language: bool = False, workspace: Optional[WorkspaceContext] = None, **settings: Any) -> Iterator[DenoiseStep]:
        """Yield every denoising step; the last one carries the InfillResult.

        `prefix` and `suffix` may be the whole text around the cursor and `cross_file`
        context from other files (comment lines): the engine cuts the window (`window`).
        Settings are SamplerSettings knobs, validated by its schema (SettingsError).
        With a syntax constraint, a middle the final check refuses is written again by
        the next model candidate (InfillRun)."""
        job = self.job(prefix, suffix, language, cancel, cross_file=cross_file, cache_key=cache_key, filename=filename, detect_language=detect_language, workspace=workspace, **settings)
        with self.lock:
            job.prepare()
            while (ids := job.canvas_ids()) is not None:
                yield job.advance(job.forward(torch.tensor(ids, dtype=torch.long, device=self.device)))
            yield job.final_step()

    def infill(self, prefix: str, suffix: str, language: Optional[str] = None, cancel: Optional[threading.Event] = None, *, cross_file: str = "", filename: Optional[str] = None, detect_language: bool = False, workspace: Optional[WorkspaceContext] = None, **settings: Any) -> InfillResult:
        """The finished middle (`stream` to its end)."""
        return run_to_end(self.stream(prefix, suffix, language, cancel, cross_file=cross_file, filename=filename, detect_language=detect_language, workspace=workspace, **settings))

    def next_edit(self, document: str, cursor: Any, history: Any = None, language: Optional[str] = None, cancel: Optional[threading.Event] = None, **limits: Any) -> NextEditResult:
        """Suggested edits near `cursor` from the user's recent edits (engine/next_edit/),
        serialized with infill requests (one model, one forward at a time)."""
        with self.lock:
            return next_edit(self, document, cursor, history, language=language, cancel=cancel, **limits)

    def forget_context(self) -> None:
        """Drop the cached contexts: the next request encodes its context from scratch
        (benchmarks time cold requests this way)."""
        with self.lock:
            self.contexts.clear()

    def drop_context(self, key: Hashable) -> None:
        """Forget `key`'s cached context: its session or document closed, nothing will reuse
        it (the engine worker calls this between passes; see EngineWorker.forget)."""
        with self.lock:
            self.contexts.forget(key)

    def describe(self) -> dict[str, Any]:
        return {"model": self.model_name, "model_dir": str(self.model_dir) if self.model_dir else None, "device": self.device, "settings": asdict(self.settings), **self.info}


def _is_infill_dir(config: dict[str, Any]) -> bool:
    return config.get("format") == "infill" or "model" in config and isinstance(config.get("model"), dict)


def _load_infill_dir(path: Path, config: dict[str, Any], device: str, threads: Optional[int], dtype: Optional[str] = None) -> Engine:
    """An Engine over one of infill's own model directories, with the sampler windows the
    model was trained on, computing in `compute_dtype(dtype, device)`."""
    tokenizer = load_tokenizer(path)
    model = load_infill_model(path, config, device=device)
    if dtype is None and config.get("quantization") and not os.environ.get("INFILL_DTYPE"):
        # A quantized directory's layers dequantize their weights on every call on a CPU
        # (engine/quant/linear.py): fp32 there unless bf16 is asked for by name.
        dtype = "fp32"
    precision = compute_dtype(dtype, device)
    if precision != torch.float32:
        model.to(precision)  # every parameter; logits come back fp32 (InfillTransformer.logits)
        if str(device).startswith("cpu"):
            bucket_rows(model)  # a bounded set of oneDNN kernels (engine/precision.py)
    if tokenizer.vocab_size > model.cfg.vocab_size:
        raise InfillError(f"{path}: tokenizer has {tokenizer.vocab_size} tokens but the model only {model.cfg.vocab_size}")
    info = {"parameters": model.num_parameters(), "training": config.get("training", {}), "quantization": config.get("quantization"), "dtype": str(precision).replace("torch.", "")}
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
    work; every problem is an InfillError with a one-line message. `quantization` (e.g.
    "nf4", "int8") and `cache_policy` apply to family checkpoints; infill's own
    directories carry their quantization in config.json. `dtype`: for family checkpoints
    the load dtype; for infill's own directories the compute dtype ("fp32", "bf16", or
    None/"auto": `compute_dtype`)."""
    path = Path(model_dir).expanduser() if model_dir is not None else DEFAULT_MODEL_DIR
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise InfillError(f"device {device!r} requested but no CUDA GPU is available; use --device cpu")
    config = read_config(path)
    if _is_infill_dir(config):
        return _load_infill_dir(path, config, device, threads, dtype)
    from engine import families

    model, tokenizer, info = families.load_family_model(path, device=device, dtype=dtype, quantization=quantization, cache_policy=cache_policy)
    _set_threads(threads, sum(p.numel() for p in model.parameters()) if isinstance(model, torch.nn.Module) else SMALL_MODEL_PARAMETERS)
    return Engine(model, tokenizer, model_dir=path, name=info.get("family", path.name), info=info, device=device)
