"""infill's engine: a masked-diffusion model that writes the middle between prefix and suffix.

The whole public surface:
    engine.load(model_dir=None) -> Engine     (default: engine.DEFAULT_MODEL_DIR, the embedded model)
    Engine.infill(prefix, suffix, language=None, cross_file="", **settings) -> InfillResult
    Engine.stream(prefix, suffix, language=None, cross_file="", **settings) -> Iterator[DenoiseStep]
    Engine.next_edit(document, cursor, history, language=None, **limits) -> edits near the cursor
    engine.worker.EngineWorker(eng)           the one thread a server runs model work on

Importing `engine` (or `engine.types`, `engine.text`, `engine.context_window`, `engine.healing`, `engine.worker`)
does not import torch: the model-facing names below load on first use, so front ends
can use the types, the settings schema and the position codec at no cost.
"""
from typing import Any

from engine.types import CanvasChange, DenoiseStep, InfillError, InfillRequest, InfillResult, SamplerSettings, SettingsError

_FROM_API = ("DEFAULT_MODEL_DIR", "Engine", "load")

__all__ = [*_FROM_API, "CanvasChange", "DenoiseStep", "InfillError", "InfillRequest", "InfillResult", "SamplerSettings", "SettingsError"]


def __getattr__(name: str) -> Any:
    if name in _FROM_API:
        from engine import api  # torch and the model code load here, on first use

        return getattr(api, name)
    raise AttributeError(f"module 'engine' has no attribute {name!r}")
