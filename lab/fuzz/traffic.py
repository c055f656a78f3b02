"""A seeded generator of LSP client traffic, right and wrong, with what each message
should get back. No I/O here: `lsp_fuzz.py` sends the bytes and checks the answers.

The reference documents in `self.documents` are what the server's copies must equal
after every message (reference.py); each message that changes a text is followed by an
`infill/documentState` request whose expected SHA-256 is taken from the reference.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any, Optional

from .reference import ReferenceDocument, digest, lines_of, unit_count

ENCODINGS = ("utf-8", "utf-16", "utf-32")
LANGUAGES = ("python", "javascript", "go", "rust", "plaintext")
SEEDS = {
    "python": "import os\r\n\r\ndef area(width, height):\n    return width * height\n\nclass Point:\n\tpass\n",
    "javascript": "const xs = [1, 2, 3];\nfunction add(a, b) {\n  return a + b;\n}\n// 😀 done\n",
    "go": "package main\n\nfunc main() {\n\tprintln(\"héllo\")\n}\n",
    "rust": "fn main() {\r\n    let v = vec![1, 2];\r\n    println!(\"{:?}\", v);\r\n}\r\n",
    "plaintext": "Lines\rwith old Mac breaks\rand a form\x0cfeed and \u2028 a separator\n",
}
# Pieces an edit inserts: line breaks of every kind, tabs, emoji (two UTF-16 units, four
# UTF-8 bytes), accents, CJK, characters Python calls line breaks but LSP does not, code,
# and lone low surrogates (JSON's "\udc80" escapes) that no encoder accepts. No lone high
# surrogate: next to a low one JSON would join the two into one character.
PIECES = ("x", "foo", "(", ")", ":", " ", "    ", "\t", "\n", "\r\n", "\r", "😀", "é", "日本語", "\u2028",
          "\x0c", "return value", "def f(a, b):\n    return a\n", "if x:\r\n\tpass\r\n", "\udc80",
          "𝔘𝔫𝔦", "}", "{", "\"", "'''", "#")
MAX_DOCUMENT_CHARS = 60_000


@dataclass
class Expect:
    """A request that must get exactly one answer, and what to check in it."""

    id: Any
    check: str  # "inline" | "completion" | "next_edit" | "state" | "error" | "any"
    uri: Optional[str] = None
    digest: Optional[str] = None  # "state": the reference text's SHA-256 (None: not open)
    version: Optional[int] = None
    code: Optional[int] = None  # "error": the expected error code


@dataclass
class Outgoing:
    data: bytes  # the framed bytes (or junk) to write
    kind: str
    expects: list[Expect] = field(default_factory=list)
    null_answers: int = 0  # answers with id null this message must produce
    maybe_null_answers: int = 0  # ... and how many more it may produce (a lying length may or may not eat JSON)
    changed: list[str] = field(default_factory=list)  # uris whose reference text this message changed
    settle: bool = False  # wait for the answers before sending more (so the model gets to answer)


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def encode(message: Any) -> bytes:
    return json.dumps(message).encode("utf-8")  # ensure_ascii: lone surrogates become \\udc80 escapes


class Traffic:
    def __init__(self, seed: int, settings: dict) -> None:
        self.rng = random.Random(seed)
        self.encoding = "utf-16"  # until initialize answers
        self.documents: dict[str, ReferenceDocument] = {}
        self.closed: set[str] = set()
        self.settings = dict(settings)
        self._ids = 0
        self._recent_ids: list[int] = []
        self._version = 1

    # -- ids and plumbing -------------------------------------------------------------------
    def next_id(self) -> int:
        self._ids += 1
        self._recent_ids = (self._recent_ids + [self._ids])[-20:]
        return self._ids

    def request(self, method: str, params: Any, check: str, kind: Optional[str] = None, **expect: Any) -> Outgoing:
        message_id = self.next_id()
        body = encode({"jsonrpc": "2.0", "id": message_id, "method": method, "params": params})
        return Outgoing(frame(body), kind or method, [Expect(message_id, check, **expect)])

    def _maybe_settle(self, out: Outgoing) -> Outgoing:
        # Most completions are overtaken by the next keystroke (superseded, or stale when
        # the text changed meanwhile); one in ten waits for its answer so that answers
        # with positions in them get checked too.
        out.settle = self.rng.random() < 0.1
        return out

    def notify(self, method: str, params: Any, kind: Optional[str] = None) -> Outgoing:
        return Outgoing(frame(encode({"jsonrpc": "2.0", "method": method, "params": params})), kind or method)

    def state_check(self, uri: str) -> Outgoing:
        document = self.documents.get(uri)
        if document is None:
            return self.request("infill/documentState", {"textDocument": {"uri": uri}}, "error", uri=uri, code=-32602)
        return self.request("infill/documentState", {"textDocument": {"uri": uri}}, "state", uri=uri,
                            digest=digest(document.text), version=document.version)

    # -- the session --------------------------------------------------------------------------
    def initialize(self) -> Outgoing:
        offered = self.rng.sample(ENCODINGS, self.rng.randint(1, 3))
        capabilities = {"general": {"positionEncodings": offered}, "workspace": {"configuration": True},
                        "window": {"workDoneProgress": self.rng.random() < 0.5}}
        params = {"processId": None, "rootUri": None, "capabilities": capabilities,
                  "initializationOptions": self.settings}
        return self.request("initialize", params, "any")

    def open_all(self) -> list[Outgoing]:
        out = []
        for index, language in enumerate(LANGUAGES):
            out.append(self._open(f"file:///fuzz/doc{index}.{language[:2]}", language))
        return out

    def _open(self, uri: str, language: str, text: Optional[str] = None) -> Outgoing:
        self._version += 1
        document = ReferenceDocument(uri, language, self._version, text if text is not None else SEEDS[language])
        self.documents[uri] = document
        self.closed.discard(uri)
        params = {"textDocument": {"uri": uri, "languageId": language, "version": document.version,
                                   "text": document.text}}
        out = self.notify("textDocument/didOpen", params)
        out.changed.append(uri)
        return out

    # -- one step --------------------------------------------------------------------------------
    def step(self) -> Outgoing:
        r = self.rng.random()
        for weight, make in self._menu():
            if r < weight:
                return make()
            r -= weight
        return self.edit()

    def _menu(self) -> list:
        return [
            (0.34, self.edit), (0.02, self.replace_all), (0.15, self.inline), (0.08, self.completion),
            (0.03, self.next_edit), (0.05, self.cancel), (0.01, self.stats), (0.02, self.open_close),
            (0.02, self.configuration), (0.04, self.wrong_request), (0.04, self.wrong_json),
            (0.04, self.framing), (0.03, self.wrong_lifecycle), (0.02, self.backwards_version),
            (0.03, self.duplicate_id), (0.02, self.batch), (0.02, self.change_unknown), (0.01, self.stray_response),
            (0.04, self.bad_change),
        ]

    def _document(self) -> ReferenceDocument:
        return self.rng.choice(list(self.documents.values()))

    def _position(self, document: ReferenceDocument, valid: bool = True) -> dict:
        spans = lines_of(document.text)
        if not valid:
            choice = self.rng.randrange(4)
            if choice == 0:
                return {"line": len(spans) + self.rng.randrange(5), "character": self.rng.randrange(10)}
            if choice == 1:
                line = self.rng.randrange(len(spans))
                width = unit_count(document.text[spans[line][0]:spans[line][1]], self.encoding)
                return {"line": line, "character": width + 1 + self.rng.randrange(50)}
            if choice == 2:
                return {"line": 10**6, "character": 10**6}
            return {"line": len(spans) - 1, "character": 0}
        line = self.rng.randrange(len(spans))
        start, end = spans[line]
        k = self.rng.randint(0, end - start)
        return {"line": line, "character": unit_count(document.text[start:start + k], self.encoding)}

    def _piece(self) -> str:
        if self.rng.random() < 0.01:
            return "y" * self.rng.randint(2_000, 20_000)  # a huge line
        return "".join(self.rng.choice(PIECES) for _ in range(self.rng.randint(0, 4)))

    # -- text changes (the reference follows) -----------------------------------------------------
    def edit(self, version_step: int = 1) -> Outgoing:
        document = self._document()
        changes = []
        for _ in range(self.rng.choice((1, 1, 1, 2, 3))):
            start = self._position(document, valid=self.rng.random() < 0.93)
            end = self._position(document) if self.rng.random() < 0.7 else dict(start)
            if self.rng.random() < 0.05:
                start, end = end, start  # a reversed range
            text = self._piece() if len(document.text) < MAX_DOCUMENT_CHARS else ""
            change = {"range": {"start": start, "end": end}, "text": text}
            document.apply(change, self.encoding)
            changes.append(change)
        document.version += version_step
        params = {"textDocument": {"uri": document.uri, "version": document.version}, "contentChanges": changes}
        out = self.notify("textDocument/didChange", params, "didChange" if version_step > 0 else "didChange backwards")
        out.changed.append(document.uri)
        return out

    def backwards_version(self) -> Outgoing:
        return self.edit(version_step=-self.rng.randint(0, 3))

    def replace_all(self) -> Outgoing:
        document = self._document()
        text = SEEDS[document.language_id] * self.rng.randint(0, 3) + self._piece()
        change = {"text": text}
        document.apply(change, self.encoding)
        document.version += 1
        out = self.notify("textDocument/didChange", {"textDocument": {"uri": document.uri, "version": document.version},
                                                     "contentChanges": [change]}, "didChange full")
        out.changed.append(document.uri)
        return out

    def open_close(self) -> Outgoing:
        if self.closed and self.rng.random() < 0.6:
            uri = self.rng.choice(sorted(self.closed))
            language = LANGUAGES[int(uri.split("doc")[1].split(".")[0]) % len(LANGUAGES)]
            return self._open(uri, language, self._piece() + SEEDS[language])
        if len(self.documents) > 2:
            document = self._document()
            del self.documents[document.uri]
            self.closed.add(document.uri)
            out = self.notify("textDocument/didClose", {"textDocument": {"uri": document.uri}})
            out.changed.append(document.uri)
            return out
        document = self._document()  # re-open an open document: the new text replaces the old
        return self._open(document.uri, document.language_id, self._piece())

    # -- requests -----------------------------------------------------------------------------------
    def _text_position(self) -> tuple[str, dict]:
        document = self._document()
        if self.rng.random() < 0.05 and self.closed:
            return self.rng.choice(sorted(self.closed)), {"line": 0, "character": 0}
        return document.uri, self._position(document, valid=self.rng.random() < 0.85)

    def inline(self) -> Outgoing:
        uri, position = self._text_position()
        params = {"textDocument": {"uri": uri}, "position": position, "context": {"triggerKind": self.rng.choice((1, 2))}}
        return self._maybe_settle(self.request("textDocument/inlineCompletion", params, "inline", uri=uri))

    def completion(self) -> Outgoing:
        uri, position = self._text_position()
        return self._maybe_settle(self.request(
            "textDocument/completion", {"textDocument": {"uri": uri}, "position": position}, "completion", uri=uri))

    def next_edit(self) -> Outgoing:
        uri, position = self._text_position()
        document = self.documents.get(uri)
        version = document.version if document is not None and self.rng.random() < 0.8 else None
        return self._maybe_settle(self.request(
            "infill/nextEdit", {"textDocument": {"uri": uri, "version": version}, "position": position}, "next_edit",
            uri=uri))

    def stats(self) -> Outgoing:
        return self.request("infill/stats", None, "any")

    def cancel(self) -> Outgoing:
        target = self.rng.choice(self._recent_ids) if self._recent_ids and self.rng.random() < 0.9 else 10**9
        return self.notify("$/cancelRequest", {"id": target}, "cancel")

    def configuration(self) -> Outgoing:
        choice = self.rng.choice((0, 0, 0, 1, 1, 2, 2, 3, 3, 4))  # a model dir change (4) reloads: rarer
        if choice == 0:
            settings: Any = {"infill": {"debounceMs": self.rng.randint(0, 20), "maxTokens": self.rng.randint(1, 8)}}
        elif choice == 1:
            settings = {"infill": {"maxTokens": self.rng.choice(("many", -3, [1], None)), "bogus": 1}}
        elif choice == 2:
            settings = None  # a pull-model nudge: the server asks with workspace/configuration
        elif choice == 3:
            settings = {"infill": self.rng.choice((42, "x", [1, 2]))}
        else:
            # A model directory that does not exist, then back to the default (null): the
            # server must say so, keep answering, and load the default again.
            model_dir = "/nonexistent/model" if self.rng.random() < 0.5 else None
            settings = {"infill": {"modelDir": model_dir, "constrained": self.rng.random() < 0.5}}
        return self.notify("workspace/didChangeConfiguration", {"settings": settings}, "didChangeConfiguration")

    # -- the client's mistakes --------------------------------------------------------------------------
    def wrong_request(self) -> Outgoing:
        document = self._document()
        choice = self.rng.randrange(6)
        if choice == 0:
            return self.request(f"nonsense/method{self.rng.randrange(100)}", {}, "error", kind="unknown method",
                                code=-32601)
        if choice == 1:
            return self.request("textDocument/inlineCompletion", {"textDocument": {"uri": document.uri},
                                                                  "position": "here"}, "error", code=-32602)
        if choice == 2:
            position = {"line": -self.rng.randint(1, 5), "character": -1}
            return self.request("textDocument/completion", {"textDocument": {"uri": document.uri},
                                                            "position": position}, "any")
        if choice == 3:
            return self.request("infill/nextEdit", {"position": {"line": "x"}}, "error", code=-32602)
        if choice == 4:
            return self.request("workspace/executeCommand", {"command": "infill.accept",
                                                             "arguments": [{"bad": True}, 3]}, "any")
        return self.notify(f"unknown/notification{self.rng.randrange(100)}", [1, 2], "unknown notification")

    def wrong_json(self) -> Outgoing:
        choice = self.rng.randrange(9)
        message_id = self.next_id()
        if choice == 0:
            return Outgoing(frame(b"{this is not json"), "not json", null_answers=1)
        if choice == 1:
            return Outgoing(frame(b'"a string"'), "non-object json", null_answers=1)
        if choice == 2:
            return Outgoing(frame(b"[" * 100_000 + b"]" * 100_000), "deeply nested json", null_answers=1)
        if choice == 3:
            body = encode({"jsonrpc": "2.0", "id": message_id, "method": 42, "params": {}})
            return Outgoing(frame(body), "method 42", [Expect(message_id, "error", code=-32600)])
        if choice == 4:
            body = encode({"jsonrpc": "1.0", "id": message_id, "method": "infill/stats"})
            return Outgoing(frame(body), "jsonrpc 1.0", [Expect(message_id, "error", code=-32600)])
        if choice == 5:
            body = encode({"jsonrpc": "2.0", "id": self.rng.choice((True, 1.5, {"a": 1})), "method": "infill/stats"})
            return Outgoing(frame(body), "bad id", null_answers=1)
        if choice == 6:
            return Outgoing(frame(bytes(self.rng.randrange(256) for _ in range(64))), "binary body", null_answers=1)
        if choice == 7:
            body = encode({"jsonrpc": "2.0", "id": message_id, "method": "infill/stats", "params": 7})
            return Outgoing(frame(body), "scalar params", [Expect(message_id, "error", code=-32600)])
        return Outgoing(frame(encode({"jsonrpc": "2.0"})), "no method no result", null_answers=1)

    def framing(self) -> Outgoing:
        """Bad framing around an infill/stats request; lenient spellings must be answered."""
        message_id = self.next_id()
        body = encode({"jsonrpc": "2.0", "id": message_id, "method": "infill/stats"})
        n = len(body)
        lenient = {
            "lower-case header": b"content-length: %d\r\n\r\n" % n + body,
            "LF-only header": b"Content-Length: %d\n\n" % n + body,
            "no space after colon": b"Content-Length:%d\r\n\r\n" % n + body,
            "two spaces after colon": b"Content-Length:  %d\r\n\r\n" % n + body,
            "extra header": b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: %d\r\n\r\n" % n + body,
        }
        lost = {
            "huge length": b"Content-Length: 100000000000\r\n\r\n" + body,
            "5000-digit length": b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n" + body,
            "missing blank line": b"Content-Length: %d\r\n" % n + body,
            "non-numeric length": b"Content-Length: twelve\r\n\r\n" + body,
            "negative length": b"Content-Length: -%d\r\n\r\n" % n + body,
            "body without header": body,
            "binary junk": bytes(self.rng.randrange(256) for _ in range(self.rng.randint(1, 300))).replace(b"\n", b" "),
            "length larger than body": b"Content-Length: %d\r\n\r\n" % (n + 40) + body,
            "header over the cap": b"X-Pad: " + b"p" * 9000 + b"\r\n",
        }
        name = self.rng.choice(sorted(lenient) + sorted(lost))
        if name in lenient:
            return Outgoing(lenient[name], f"framing: {name}", [Expect(message_id, "any")])
        # A length larger than the body: if no whole header follows within it (the next
        # message is junk, or a header too long to fit), its bytes are a body that is not
        # JSON, answered with a Parse error; else it is dropped when the header interrupts it.
        return Outgoing(lost[name], f"framing: {name}", maybe_null_answers=int(name == "length larger than body"))

    def wrong_lifecycle(self) -> Outgoing:
        if self.rng.random() < 0.5:
            return self.notify("initialized", {}, "extra initialized")
        params = {"processId": None, "rootUri": None, "capabilities": {"general": {"positionEncodings": ["utf-32"]}}}
        return self.request("initialize", params, "error", code=-32600)

    def duplicate_id(self) -> Outgoing:
        message_id = self.next_id()
        uri, position = self._text_position()
        body = encode({"jsonrpc": "2.0", "id": message_id, "method": "textDocument/inlineCompletion",
                       "params": {"textDocument": {"uri": uri}, "position": position,
                                  "context": {"triggerKind": 1}}})
        return Outgoing(frame(body) + frame(body), "duplicate id", [Expect(message_id, "inline", uri=uri),
                                                                    Expect(message_id, "inline", uri=uri)])

    def batch(self) -> Outgoing:
        first, second = self.next_id(), self.next_id()
        items = [{"jsonrpc": "2.0", "id": first, "method": "infill/stats"},
                 {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": first}},
                 {"jsonrpc": "2.0", "id": second, "method": "infill/stats"}, 7]
        return Outgoing(frame(encode(items)), "batch", [Expect(first, "error", code=-32600),
                                                        Expect(second, "error", code=-32600)], null_answers=1)

    def change_unknown(self) -> Outgoing:
        params = {"textDocument": {"uri": f"file:///never/opened{self.rng.randrange(9)}.py", "version": 3},
                  "contentChanges": [{"range": {"start": {"line": 0, "character": 0},
                                                "end": {"line": 0, "character": 0}}, "text": "y"}]}
        return self.notify("textDocument/didChange", params, "didChange unknown document")

    def bad_change(self) -> Outgoing:
        """A didChange whose params do not fit: refused whole, the text stays as it was."""
        document = self._document()
        params = self.rng.choice((
            {"textDocument": {"uri": document.uri, "version": 1}, "contentChanges": "x"},
            {"textDocument": {"uri": document.uri}, "contentChanges": [{"range": {"start": 1}, "text": "q"}]},
            {"textDocument": {"uri": document.uri, "version": "v"}, "contentChanges": []},
        ))
        out = self.notify("textDocument/didChange", params, "didChange wrong types")
        out.changed.append(document.uri)  # checked: unchanged
        return out

    def stray_response(self) -> Outgoing:
        body = encode({"jsonrpc": "2.0", "id": f"never-asked-{self.rng.randrange(1000)}", "result": [1]})
        return Outgoing(frame(body), "stray response")
