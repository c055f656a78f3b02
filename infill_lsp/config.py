"""Settings the client sends (initializationOptions, workspace/configuration and
workspace/didChangeConfiguration), parsed into one typed object.

Keys are camelCase as LSP clients write them. Sampler knobs are the engine's
`SamplerSettings` fields, accepted at the top level in camelCase or snake_case
("maxTokens" or "max_tokens") or under a "sampler" table, and validated by the engine's
one settings schema (engine.types.check_knob), as the live protocol and the batch
contract are. How much text around the cursor the model sees is the engine's decision
(engine/window.py), not a setting here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from engine.types import SamplerSettings, SettingsError, check_knob

SECTION = "infill"  # the workspace/configuration section this server reads

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])([A-Z])")


def snake_case(name: str) -> str:
    return _CAMEL_BOUNDARY.sub(r"_\1", name).lower()


@dataclass(frozen=True)
class LspSettings:
    model_dir: str | None = None  # None = the engine's embedded model
    debounce_ms: float = 15.0  # wait this long for a newer keystroke before running the model
    cross_file_chars: int = 1500  # context gathered from other open documents (0 = off); the engine keeps what fits its window
    workspace_index: bool = True  # index the workspace folders for drafts (infill_lsp/workspace_folders.py); `infill lsp --no-workspace` wins
    sampler: Mapping[str, object] = field(default_factory=dict)  # SamplerSettings overrides
    next_edit: Mapping[str, object] = field(default_factory=dict)  # engine.next_edit limits ("nextEdit")


# Server knobs: camelCase key -> (attribute, accepted types, lower bound)
_SERVER_KEYS: dict[str, tuple[str, tuple[type, ...], float]] = {
    "debounceMs": ("debounce_ms", (int, float), 0),
    "crossFileChars": ("cross_file_chars", (int,), 0),
}
# Settings of older versions, now decided by the engine: accepted and ignored, not an error.
_RETIRED_KEYS = frozenset({"maxPrefixChars", "maxSuffixChars"})


def parse_settings(raw: Any, base: LspSettings) -> tuple[LspSettings, list[str]]:
    """Apply a client's settings object on top of `base`.

    Returns the new settings and a list of one-line problems (bad types, bad values).
    A bad key is skipped; the rest still apply, so one typo never disables the server.
    """
    problems: list[str] = []
    if raw is None or raw == []:
        # Lua has one empty table for both: `settings = {}` reaches us as an empty list.
        return base, problems
    if not isinstance(raw, Mapping):
        return base, [f"settings must be an object, got {type(raw).__name__}"]
    # Clients nest our settings under "infill" in didChangeConfiguration; accept both shapes.
    if isinstance(raw.get(SECTION), Mapping):
        raw = raw[SECTION]
    elif raw.get(SECTION) == []:
        return base, problems

    changes: dict[str, object] = {}
    sampler = dict(base.sampler)
    for key, value in raw.items():
        if not isinstance(key, str):
            continue
        if key == "modelDir" or key == "model_dir":
            if value is None or value == "":
                changes["model_dir"] = None
            elif isinstance(value, str):
                changes["model_dir"] = value
            else:
                problems.append(f"modelDir must be a string path, got {value!r}")
        elif key in _RETIRED_KEYS:
            continue
        elif key in ("workspaceIndex", "workspace_index"):
            if isinstance(value, bool):
                changes["workspace_index"] = value
            else:
                problems.append(f"workspaceIndex must be true or false, got {value!r}")
        elif key in _SERVER_KEYS:
            attribute, kinds, lower = _SERVER_KEYS[key]
            if isinstance(value, bool) or not isinstance(value, kinds) or value < lower:
                problems.append(f"{key} must be a number >= {lower:g}, got {value!r}")
            else:
                changes[attribute] = value
        elif key in ("nextEdit", "next_edit"):
            if not isinstance(value, Mapping):
                problems.append(f"nextEdit must be an object, got {value!r}")
                continue
            # Checked against the engine's NextEditLimits when a request uses them.
            changes["next_edit"] = {snake_case(str(k)): v for k, v in value.items() if isinstance(v, (bool, int, float, str))}
        elif key == "sampler":
            if not isinstance(value, Mapping):
                problems.append(f"sampler must be an object, got {value!r}")
                continue
            for knob, knob_value in value.items():
                _set_knob(sampler, str(knob), knob_value, problems)
        else:
            _set_knob(sampler, key, value, problems)
    return replace(base, sampler=sampler, **changes), problems  # type: ignore[arg-type]


def _set_knob(sampler: dict[str, object], key: str, value: object, problems: list[str]) -> None:
    if value is None:
        sampler.pop(snake_case(key), None)  # null = back to the engine's default
    elif isinstance(value, (bool, int, float)):
        sampler[snake_case(key)] = value
    else:
        problems.append(f"{key} must be a number or a boolean, got {value!r}")


def check_sampler_overrides(overrides: Mapping[str, object]) -> tuple[dict[str, object], list[str]]:
    """Keep the overrides the engine's settings schema accepts; one problem line per
    refused knob (the rest still apply)."""
    known: dict[str, object] = {}
    problems: list[str] = []
    for name, value in overrides.items():
        try:
            known[name] = check_knob(SamplerSettings, name, value)
        except SettingsError as error:
            problems.append(str(error))
    return known, problems
