"""infill's engine: a masked-diffusion model that writes the middle between prefix and suffix.

The whole public surface:
    engine.load(model_dir=None) -> Engine     (default: engine.DEFAULT_MODEL_DIR, the embedded model)
    Engine.infill(prefix, suffix, language=None, **settings) -> InfillResult
    Engine.stream(prefix, suffix, language=None, **settings) -> Iterator[DenoiseStep]
    engine.next_edit(eng, document, cursor, history, language=None, **limits) -> edits near the cursor
"""
from engine.api import DEFAULT_MODEL_DIR, Engine, load
from engine.next_edit import next_edit
from engine.types import CanvasChange, DenoiseStep, InfillError, InfillRequest, InfillResult, SamplerSettings

__all__ = ["DEFAULT_MODEL_DIR", "Engine", "load", "next_edit", "CanvasChange", "DenoiseStep", "InfillError", "InfillRequest", "InfillResult", "SamplerSettings"]
