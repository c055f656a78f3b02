"""One max_tokens limit, the settings schema's, on every surface (issue 26, defect 5: the
README's batch contract said 0-4096, `infill batch` enforced 0-2048, the live protocol and
the HTTP API 256, the schema 4096)."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from engine.types import MAX_TOKENS, SamplerSettings, SettingsError
from infill_lsp import batch
from infill_lsp.config import LspSettings, check_sampler_overrides, parse_settings
from infill_lsp.live import openai_api
from infill_lsp.live import protocol as p
from infill_lsp.live.limits import Limits

ROOT = Path(__file__).resolve().parents[1]
REFUSAL = f"setting 'max_tokens' must be an integer in [0, {MAX_TOKENS}]; got {MAX_TOKENS + 1}"


def test_the_schema_holds_the_one_limit():
    assert MAX_TOKENS == 2048
    assert SamplerSettings().replace(max_tokens=MAX_TOKENS).max_tokens == MAX_TOKENS
    with pytest.raises(SettingsError, match=re.escape(REFUSAL)):
        SamplerSettings().replace(max_tokens=MAX_TOKENS + 1)


def test_batch():
    _, fields = batch.parse_line(json.dumps({"id": "a", "prefix": "x = ", "suffix": "\n", "max_tokens": MAX_TOKENS}))
    assert fields["max_tokens"] == MAX_TOKENS
    with pytest.raises(batch.BadLine, match=re.escape(REFUSAL)):
        batch.parse_line(json.dumps({"id": "a", "prefix": "x = ", "suffix": "\n", "max_tokens": MAX_TOKENS + 1}))


def test_lsp_configuration():
    for key in ("maxTokens", "max_tokens"):
        settings, problems = parse_settings({"infill": {key: MAX_TOKENS}}, LspSettings())
        assert check_sampler_overrides(settings.sampler) == ({"max_tokens": MAX_TOKENS}, []) and problems == []
        settings, _ = parse_settings({"infill": {key: MAX_TOKENS + 1}}, LspSettings())
        assert check_sampler_overrides(settings.sampler) == ({}, [REFUSAL])


def _infill_message(max_tokens: int) -> str:
    position = {"line": 0, "character": 0}
    return json.dumps({"type": "infill", "session": "a", "id": 1, "range": {"start": position, "end": position}, "settings": {"max_tokens": max_tokens}})


def test_live_protocol_with_the_servers_default_limits():
    limit = Limits().max_request_tokens
    assert p.parse_message(_infill_message(MAX_TOKENS), max_request_tokens=limit).settings == {"max_tokens": MAX_TOKENS}
    with pytest.raises(p.ProtocolError, match=re.escape(REFUSAL)) as refused:
        p.parse_message(_infill_message(MAX_TOKENS + 1), max_request_tokens=limit)
    assert refused.value.code == p.E_BAD_SETTINGS
    assert Limits().public()["max_request_tokens"] == MAX_TOKENS  # what `hello` tells clients


def test_http_api_with_the_servers_default_limits():
    limit = Limits().max_request_tokens
    for body in ({"prompt": "x = ", "max_tokens": MAX_TOKENS}, {"prompt": "x = ", "infill": {"max_tokens": MAX_TOKENS}}):
        assert openai_api.parse_completion_request(json.dumps(body).encode(), max_request_tokens=limit).settings["max_tokens"] == MAX_TOKENS
    for body in ({"prompt": "x = ", "max_tokens": MAX_TOKENS + 1}, {"prompt": "x = ", "infill": {"max_tokens": MAX_TOKENS + 1}}):
        with pytest.raises(openai_api.ApiError, match=re.escape(REFUSAL)):
            openai_api.parse_completion_request(json.dumps(body).encode(), max_request_tokens=limit)


def test_cli_complete(tmp_path, tiny_model_dir):
    path = tmp_path / "a.py"
    path.write_text("x = \n")

    def complete(max_tokens: int) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "infill_lsp.cli", "complete", str(path), "--line", "1", "--column", "5", "--model", str(tiny_model_dir),
                               "--max-tokens", str(max_tokens), "--deadline", "0", "--no-constrained", "--json"], capture_output=True, text=True, timeout=180, cwd=ROOT)

    refused = complete(MAX_TOKENS + 1)
    assert refused.returncode != 0 and REFUSAL in refused.stderr and "Traceback" not in refused.stderr
    accepted = complete(MAX_TOKENS)
    assert accepted.returncode == 0, accepted.stderr
    assert json.loads(accepted.stdout)["stop_reason"] == "deadline"  # it ran (one pass: --deadline 0)


def test_readme_and_docs_state_the_same_limit():
    readme = (ROOT / "README.md").read_text()
    assert f'`"max_tokens"` (int, 0-{MAX_TOKENS})' in readme
    assert f"| `max_tokens` | int, 0 … {MAX_TOKENS} |" in (ROOT / "docs/http-api.md").read_text()
    assert f"`max_tokens` (0 … {MAX_TOKENS}" in (ROOT / "docs/live-protocol.md").read_text()
    for doc in ("README.md", "docs/http-api.md", "docs/live-protocol.md", "docs/lsp.md", "infill_lsp/batch.py"):
        text = (ROOT / doc).read_text()
        assert not re.search(r"max_tokens[^\n]{0,40}\b(4096|256|1024)\b", text), doc
