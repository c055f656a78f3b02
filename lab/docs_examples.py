"""The example answers in the docs, produced by this build (issue 35, item 7).

Every example marked `<!-- example: NAME -->` in docs/http-api.md and docs/live-protocol.md
is run against a real `infill serve` (the embedded model, on a free loopback port): the
curl command in the block after the marker is parsed and sent as written (URL path,
headers, body; `$TOKEN` is the server's token), the live-protocol transcript's `→`
messages are sent over the WebSocket, and the answer is rendered into the block after
that (for the transcript: the `←` lines of the same block). The engine is greedy, so
answers are the same for the same build; what varies from run to run (ids, clocks,
milliseconds, the replica, a step's confidence) is shown as `…`.

    python -m lab.docs_examples --check    # exit 1 and a diff when a documented answer drifted
    python -m lab.docs_examples --write    # rewrite the answers in the docs

tests/test_docs_examples.py runs the check. A streamed answer may come with fewer step
events than the docs show (a slow reader gets several passes merged into one event, by
design): the check then accepts the events it got when each is one of the documented ones
and the rest of the answer is the same.
"""
from __future__ import annotations

import argparse
import asyncio
import difflib
import json
import re
import secrets
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

ROOT = Path(__file__).resolve().parents[1]
DOCS = (ROOT / "docs" / "http-api.md", ROOT / "docs" / "live-protocol.md")
DOCUMENTED_BASE = "http://127.0.0.1:8765"  # the address the docs' commands use
WIDTH = 100  # answers are wrapped to this many characters

ERROR_COMMENT = re.compile(r"# \d{3} \w+")
SAME_BLOCK = {"http-errors"}  # examples whose answers are in the request block (a transcript, `# 401 code`)
MARKER = re.compile(r"^<!-- example: (?P<name>[a-z0-9-]+) -->\n", re.M)
FENCE = re.compile(r"^```[a-z]*\n(?P<body>.*?)^```\n", re.M | re.S)

# -- rendering an answer -------------------------------------------------------------------
#
# A spec says what of an answer the docs show: for an object, the keys in the order shown,
# each with its own spec; SHOW is the value as it came; VARIES a value that changes from
# run to run, shown as `…`; OMIT a key left out where it stands (an `…` there); ELIDED an
# object shown as `{…}`; a string starting with "=" is shown as written; a list spec
# [item_spec] applies to every item. Keys of the answer that the spec does not name are
# left out with an `…` at the end of their object.

SHOW, VARIES, OMIT, ELIDED = "show", "varies", "omit", "elided"
ELLIPSIS = "…"


def render(value: Any, spec: Any, compact: bool) -> str:
    sep, colon = (",", ":") if compact else (", ", ": ")
    if spec == SHOW:
        return json.dumps(value, ensure_ascii=False, separators=(sep, colon))
    if spec == VARIES:
        return ELLIPSIS
    if spec == ELIDED:
        return "{" + ELLIPSIS + "}"
    if isinstance(spec, str) and spec.startswith("="):
        return spec[1:]
    if isinstance(spec, list):
        return "[" + sep.join(render(item, spec[0], compact) for item in value) + "]"
    return "{" + sep.join(_items(value, spec, compact)) + "}"


def _items(value: dict[str, Any], spec: dict[str, Any], compact: bool,
           nested: Optional[Callable[[str, Any, Any], str]] = None) -> list[str]:
    """The shown `"key": value` items of an object, `…` for those left out (runs of them once)."""
    items: list[str] = []
    for key, sub in spec.items():
        if key not in value:
            continue
        if sub == OMIT:
            item = ELLIPSIS
        else:
            prefix = json.dumps(key) + (":" if compact else ": ")
            item = prefix + (nested(prefix, value[key], sub) if nested else render(value[key], sub, compact))
        if not (item == ELLIPSIS and items and items[-1] == ELLIPSIS):
            items.append(item)
    if set(value) - set(spec) and (not items or items[-1] != ELLIPSIS):
        items.append(ELLIPSIS)
    return items


def layout(value: Any, spec: Any, column: int = 0) -> str:
    """`render` for a block of its own: an object too wide for one line is wrapped between
    its items, continuation lines indented under the first item."""
    one_line = render(value, spec, compact=False)
    if column + len(one_line) <= WIDTH or not isinstance(spec, dict):
        return one_line
    inner = column + 1
    items = _items(value, spec, compact=False,
                   nested=lambda prefix, sub_value, sub_spec: layout(sub_value, sub_spec, inner + len(prefix)))
    lines: list[str] = []
    line = ""
    for item in items:
        if line and ("\n" in item or inner + len(line) + 2 + len(item.split("\n")[0]) > WIDTH):
            lines.append(line + ",")
            line = ""
        line = line + ", " + item if line else item
    lines.append(line)
    return "{" + ("\n" + " " * inner).join(lines) + "}"


# What each documented answer shows. The figures that follow from the model's answer
# (tokens, passes, tokens per pass, stop reason, the language) are shown and checked.
_INFILL_FIGURES = {"forwards": SHOW, "tpf": SHOW, "ms": VARIES, "replica": VARIES, "tokens": SHOW,
                   "stop_reason": SHOW, "queue_ms": VARIES, "elapsed_ms": VARIES, "language": SHOW,
                   "language_source": SHOW, "source": SHOW}
_STEP_FIGURES = {"step": SHOW, "text": SHOW, "masked": SHOW, "forwards": SHOW, "ms": VARIES}
OPENAI = {"id": '="cmpl-…"', "object": SHOW, "created": VARIES, "model": SHOW,
          "choices": [{"index": SHOW, "text": SHOW, "finish_reason": SHOW, "logprobs": SHOW}],
          "usage": SHOW, "infill": _INFILL_FIGURES}
OPENAI_STEP = {"id": '="cmpl-…"', "object": SHOW, "created": OMIT, "model": OMIT,
               "choices": [{"index": SHOW, "text": SHOW, "finish_reason": SHOW, "logprobs": SHOW}],
               "infill": _STEP_FIGURES}
OPENAI_LAST = {"id": '="cmpl-…"', "object": OMIT, "created": OMIT, "model": OMIT,
               "choices": [{"index": SHOW, "text": SHOW, "finish_reason": SHOW, "logprobs": SHOW}],
               "infill": {"forwards": SHOW, "tpf": SHOW, "ms": VARIES, "stop_reason": SHOW, "tokens": OMIT}}
OLLAMA = {"model": SHOW, "created_at": VARIES, "response": SHOW, "done": SHOW, "done_reason": SHOW,
          "total_duration": VARIES, "load_duration": SHOW, "prompt_eval_count": SHOW,
          "prompt_eval_duration": SHOW, "eval_count": SHOW, "eval_duration": VARIES,
          "infill": {"forwards": SHOW, "tpf": SHOW, "tokens": OMIT, "stop_reason": SHOW}}
LLAMACPP = {"index": SHOW, "content": SHOW, "tokens": SHOW, "id_slot": SHOW, "stop": SHOW, "model": SHOW,
            "tokens_predicted": SHOW, "tokens_evaluated": SHOW, "generation_settings": ELIDED, "prompt": SHOW,
            "has_new_line": SHOW, "truncated": SHOW, "stop_type": SHOW, "stopping_word": SHOW,
            "tokens_cached": SHOW,
            "timings": {"prompt_n": SHOW, "prompt_ms": SHOW, "prompt_per_token_ms": OMIT,
                        "prompt_per_second": OMIT, "predicted_n": SHOW, "predicted_ms": VARIES},
            "infill": {"forwards": SHOW, "tpf": SHOW, "tokens": OMIT, "stop_reason": SHOW}}
LIVE_FRAMES = {
    "opened": SHOW,
    "queued": {"type": SHOW, "session": SHOW, "id": SHOW, "pending": VARIES},
    "step": {"type": SHOW, "session": SHOW, "id": SHOW, "step": SHOW,
             "changes": [{"position": SHOW, "text": SHOW, "confidence": VARIES, "kind": SHOW}],
             "canvas": SHOW, "masked": SHOW, "forwards": SHOW, "ms": VARIES, "elapsed_ms": VARIES},
    "result": {"type": SHOW, "session": SHOW, "id": SHOW, "version": SHOW, "range": ELIDED, "text": SHOW,
               "stats": {"tokens": SHOW, "forwards": SHOW, "stop_reason": SHOW}, "queue_ms": VARIES,
               "elapsed_ms": VARIES},
}


# -- the documented examples ---------------------------------------------------------------


@dataclass
class Example:
    doc: Path
    name: str
    request: str  # the first fenced block after the marker
    answer_span: tuple[int, int]  # where the answer block's body is in the doc's text
    answer: str


def find_examples(doc: Path, text: Optional[str] = None) -> list[Example]:
    """The marked examples of a doc: the request block after each marker, then the answer
    block (the next one; for a live transcript, the same block)."""
    text = doc.read_text(encoding="utf-8") if text is None else text
    found = []
    for marker in MARKER.finditer(text):
        name = marker.group("name")
        request = FENCE.search(text, marker.end())
        if request is None:
            raise ValueError(f"{doc.name}: example {name!r} has no code block after its marker")
        answer = request if name in SAME_BLOCK or name.startswith("live") else FENCE.search(text, request.end())
        if answer is None:
            raise ValueError(f"{doc.name}: example {name!r} has no answer block")
        found.append(Example(doc, name, request.group("body"), answer.span("body"), answer.group("body")))
    return found


@dataclass
class Curl:
    method: str
    path: str
    headers: dict[str, str]
    body: Optional[bytes]
    comment: str  # what the docs say it answers (`# 401 invalid_api_key`), if anything


def parse_curl(block: str) -> list[Curl]:
    """The curl commands of a shell block (continuation lines joined; `VAR=...` lines and
    comments skipped; `head -c N /dev/zero | tr '\\0' a | curl ... --data-binary @-` sends N
    bytes of `a`)."""
    commands = []
    for line in _shell_lines(block):
        stdin: Optional[bytes] = None
        comment = line.split(" #", 1)[1].strip() if " #" in line else ""
        if "| curl " in line:
            feed, line = line.rsplit("| curl ", 1)
            size = re.search(r"head -c (\d+) /dev/zero", feed)
            if size is None:
                raise ValueError(f"cannot run the pipe into curl: {feed!r}")
            stdin, line = b"a" * int(size.group(1)), "curl " + line
        if not line.lstrip().startswith("curl "):
            continue
        words = shlex.split(line, comments=True)
        url, headers, body = "", {}, None
        i = 1
        while i < len(words):
            word = words[i]
            if word in ("-H", "--header"):
                name, _, value = words[i + 1].partition(":")
                headers[name.strip()] = value.strip()
                i += 1
            elif word in ("-d", "--data", "--data-binary", "--data-raw"):
                data = words[i + 1]
                body = stdin if data == "@-" else data.encode("utf-8")
                i += 1
            elif word.startswith("http"):
                url = word
            elif not word.startswith("-"):
                raise ValueError(f"unexpected curl argument {word!r}")
            i += 1
        if not url.startswith(DOCUMENTED_BASE):
            raise ValueError(f"the docs' commands go to {DOCUMENTED_BASE}, not {url!r}")
        commands.append(Curl("POST" if body is not None else "GET", url[len(DOCUMENTED_BASE):], headers, body, comment))
    return commands


def _shell_lines(block: str) -> list[str]:
    """The block's command lines: continuation lines joined, and so are lines inside a
    quoted string (a JSON body written over two lines)."""
    lines, pending = [], ""
    for raw in block.replace("\\\n", " ").split("\n"):
        pending = pending + "\n" + raw if pending else raw
        try:
            shlex.split(pending, comments=True)
        except ValueError:  # an open quote: the command goes on on the next line
            continue
        lines.append(pending)
        pending = ""
    if pending:
        raise ValueError(f"unbalanced quotes in {pending!r}")
    return lines


def _send(base_url: str, token: str, curl: Curl, stream: bool = False) -> tuple[int, list[bytes]]:
    """The status and the body (its lines, for a stream) of one documented command."""
    import httpx

    headers = {name: value.replace("$TOKEN", token) for name, value in curl.headers.items()}
    with httpx.Client(base_url=base_url, timeout=120.0) as client:
        with client.stream(curl.method, curl.path, headers=headers, content=curl.body) as response:
            if stream:
                return response.status_code, [line.encode("utf-8") for line in response.iter_lines()]
            return response.status_code, [response.read()]


def answer_http(example: Example, base_url: str, token: str) -> str:
    """The answer block of a curl example, as this build answers it."""
    commands = parse_curl(example.request)
    if example.name == "http-errors":  # each command's `# STATUS code` comment, as answered
        answers = iter(commands)

        def answered(match: re.Match[str]) -> str:
            status, (body,) = _send(base_url, token, next(answers))
            return f"# {status} {json.loads(body)['error'].get('code')}"

        return ERROR_COMMENT.sub(answered, example.request)
    (curl,) = commands
    if example.name == "openai-stream":
        status, lines = _send(base_url, token, curl, stream=True)
        events = [line.decode("utf-8") for line in lines if line.strip()]
        shown = []
        for event in events:
            data = event[len("data: "):]
            if data == "[DONE]":
                shown.append(event)
                continue
            chunk = json.loads(data)
            spec = OPENAI_STEP if chunk["choices"] and chunk["choices"][0]["finish_reason"] is None else OPENAI_LAST
            shown.append("data: " + render(chunk, spec, compact=True))
        return "\n\n".join(shown) + "\n"
    status, (body,) = _send(base_url, token, curl)
    if status != 200:
        raise RuntimeError(f"{example.name}: HTTP {status}: {body[:300]!r}")
    spec = {"openai": OPENAI, "ollama": OLLAMA, "llamacpp": LLAMACPP}[example.name]
    return layout(json.loads(body), spec) + "\n"


def answer_live(example: Example, base_url: str, token: str) -> str:
    """The transcript block of a live example: the `→` lines as written, each followed by
    the frames it brings, up to the one that ends it."""
    from websockets.asyncio.client import connect

    sent = [line for line in example.request.splitlines() if line.startswith("→ ")]
    ends = {"open": ("opened", "error"), "infill": ("result", "error", "cancelled"), "edit": ("edited", "error"),
            "close": ("closed", "error")}

    async def run() -> list[str]:
        out = []
        async with connect(base_url.replace("http://", "ws://") + "/ws") as ws:
            assert json.loads(await ws.recv())["type"] == "hello"
            for line in sent:
                message = json.loads(line[2:])
                if message.get("token") == ELLIPSIS:
                    message["token"] = token
                await ws.send(json.dumps(message))
                out.append(line)
                while True:
                    frame = json.loads(await asyncio.wait_for(ws.recv(), 120.0))
                    out.append("← " + render(frame, LIVE_FRAMES.get(frame["type"], SHOW), compact=True))
                    if frame["type"] in ends.get(message["type"], ()):
                        break
        return out

    return "\n".join(asyncio.run(run())) + "\n"


def is_step(line: str) -> bool:
    """A step event: one a slow reader may get merged into the next (never the last)."""
    return '"infill":{"step":' in line or '"type":"step"' in line


def agrees(documented: str, produced: str) -> bool:
    """The produced answer is the documented one; or, for a stream, the documented one with
    some step events merged away: each produced step is a documented one or, on the live
    socket, consecutive documented steps merged the way the server's outbox merges them for a
    client that reads slower than the engine writes (infill_lsp/live/outbox.py); the rest equal."""
    if documented == produced:
        return True
    doc_lines = [line for line in documented.split("\n") if line]
    got = [line for line in produced.split("\n") if line]
    if [line for line in doc_lines if not is_step(line)] != [line for line in got if not is_step(line)]:
        return False
    at = 0
    for line in got:
        if is_step(line):
            found = _documented_steps_ending(doc_lines, at, line)
            if found is None:
                return False
            at = found
        else:
            while doc_lines[at] != line:  # documented steps this stream merged away
                at += 1
            at += 1
    return True


def _documented_steps_ending(doc_lines: list[str], at: int, line: str) -> Optional[int]:
    """Where the run of documented steps from `at` on that `line` stands for ends (one step,
    a later one of the same run, or live steps merged), or None."""
    for start in range(at, len(doc_lines)):
        if not is_step(doc_lines[start]):
            return None
        if doc_lines[start] == line:
            return start + 1
        for end in range(start + 2, len(doc_lines) + 1):
            if not is_step(doc_lines[end - 1]):
                break
            if _merged_live_steps(doc_lines[start:end]) == line:
                return end
    return None


def _merged_live_steps(lines: list[str]) -> Optional[str]:
    """The rendering of documented live step frames merged by the outbox (None for others)."""
    from infill_lsp.live.outbox import merge_step

    if not all(line.startswith("← ") and '"type":"step"' in line for line in lines):
        return None
    # A rendered frame is JSON but for `…`: the values that vary, and keys left out at the end.
    frames = [json.loads(line[2:].replace(",…}", "}").replace(":…", ":null")) for line in lines]
    merged = frames[0]
    for frame in frames[1:]:
        merge_step(merged, frame)
    return "← " + render(merged, LIVE_FRAMES["step"], compact=True)


# -- running ---------------------------------------------------------------------------------


class ServeInfill:
    """`infill serve --port 0 --token T` with the embedded model, as a child process."""

    def __init__(self) -> None:
        from lab.fixtures.live_server import ServeProcess

        self.token = "docs-" + secrets.token_urlsafe(12)
        self._process = ServeProcess("", self.token)
        self._process.command = [sys.executable, "-m", "infill_lsp.live.server", "--host", "127.0.0.1",
                                 "--port", "0", f"--token={self.token}"]

    def __enter__(self) -> "ServeInfill":
        self._process.__enter__()
        self.url = self._process.url
        return self

    def __exit__(self, *exc: object) -> None:
        self._process.__exit__()


def produce(example: Example, base_url: str, token: str) -> str:
    if example.name.startswith("live"):
        return answer_live(example, base_url, token)
    return answer_http(example, base_url, token)


def check_docs(base_url: str, token: str, docs: Sequence[Path] = DOCS,
               texts: Optional[dict[Path, str]] = None) -> list[str]:
    """A diff per documented answer this build does not give (empty: the docs agree)."""
    problems = []
    for doc in docs:
        for example in find_examples(doc, (texts or {}).get(doc)):
            produced = produce(example, base_url, token)
            if not agrees(example.answer, produced):
                diff = difflib.unified_diff(example.answer.splitlines(), produced.splitlines(),
                                            f"{doc.name}: {example.name} (documented)", "this build", lineterm="")
                problems.append("\n".join(diff))
    return problems


def write_docs(base_url: str, token: str, docs: Sequence[Path] = DOCS) -> list[str]:
    """Rewrite each documented answer with this build's; the names of those that changed."""
    changed = []
    for doc in docs:
        text = doc.read_text(encoding="utf-8")
        for example in reversed(find_examples(doc, text)):  # from the end: earlier spans stay put
            produced = produce(example, base_url, token)
            if not agrees(example.answer, produced):
                start, end = example.answer_span
                text = text[:start] + produced + text[end:]
                changed.append(f"{doc.name}: {example.name}")
        doc.write_text(text, encoding="utf-8")
    return changed


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.docs_examples", description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="compare the documented answers with this build's")
    mode.add_argument("--write", action="store_true", help="rewrite the documented answers with this build's")
    args = parser.parse_args(argv)
    with ServeInfill() as server:
        if args.write:
            changed = write_docs(server.url, server.token)
            print("\n".join(f"rewrote {name}" for name in changed) or "the documented answers are this build's")
            return 0
        problems = check_docs(server.url, server.token)
    for problem in problems:
        print(problem, end="\n\n")
    if problems:
        print(f"{len(problems)} documented answer(s) are not what this build returns; "
              "`python -m lab.docs_examples --write` rewrites them", file=sys.stderr)
        return 1
    print("the documented answers are this build's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
