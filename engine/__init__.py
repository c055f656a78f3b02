"""infill's engine: a masked-diffusion model that writes the middle between prefix and suffix.

The whole public surface:
    engine.load(model_dir=None) -> Engine     (default: engine.DEFAULT_MODEL_DIR, the embedded model)
    Engine.infill(prefix, suffix, language=None, **settings) -> InfillResult
    Engine.stream(prefix, suffix, language=None, **settings) -> Iterator[DenoiseStep]
"""
from engine.api import DEFAULT_MODEL_DIR, Engine, load
from engine.types import CanvasChange, DenoiseStep, InfillError, InfillRequest, InfillResult, SamplerSettings

__all__ = ["DEFAULT_MODEL_DIR", "Engine", "load", "CanvasChange", "DenoiseStep", "InfillError", "InfillRequest", "InfillResult", "SamplerSettings"]
