"""Fuzz `infill lsp` with seeded client traffic and check what it answers.

    python -m lab.fuzz.lsp_fuzz --messages 100000 --seed 1        # prints the figures as JSON
    python -m lab.fuzz.lsp_fuzz --messages 3000 --tiny            # a tiny random model (what CI runs)

The traffic (traffic.py): incremental edits to five documents (CRLF, lone CR, tabs,
emoji, CJK, U+2028, form feeds, lone surrogates, 20,000-character lines), completions and
next-edit requests at valid and out-of-range positions, cancels, and the client's
mistakes: unknown methods, params of the wrong type, ranges past the end, versions going
backwards, duplicate ids, batches, JSON that is not an object, bodies that are not JSON,
framing errors, a second initialize. After every message that changes (or should leave
unchanged) a text, `infill/documentState` asks for the server's copy's SHA-256.

Properties, each counted (all must be 0; RSS growth is reported in MB):
  crashes            the server exited before `shutdown` + `exit`
  lost_answers       a request with a usable id that got no answer
  extra_answers      more answers for an id than requests sent with it
  wrong_answers      an answer that is not what the request must get (an error code other
                     than the expected one, a result where an error was due)
  internal_errors    error -32603, or a log line saying "internal error": the client's
                     mistakes must be reported as the client's
  out_of_document    a returned position that is not a place in the document version the
                     answer names (past a line, past the last line, inside a character)
  edit_mismatches    a completion edit whose replaced text is not where its new text starts
  text_mismatches    the server's copy differs from the reference after a message
  tracebacks         "Traceback" on the server's stderr
"""
from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict, deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from lab.fixtures.lsp_client import read_message

from ..proc_stats import rss_mb
from .reference import digest, lines_of, position_problem
from .traffic import Expect, Outgoing, Traffic

REPO = Path(__file__).resolve().parents[2]
INTERNAL_ERROR = -32603
SETTINGS = {"debounceMs": 5, "maxTokens": 6, "constrained": False}


@dataclass
class Pending:
    expect: Expect
    sent_at: int  # the message sequence number of the request


@dataclass
class Snapshot:
    seq: int  # the message after which this text was current
    version: Optional[int]  # None: the document was closed
    text: Optional[str]


class Session:
    """The server process, a reader thread, and the bookkeeping of what is owed."""

    def __init__(self, argv: list[str], stderr_path: Path, settings: dict) -> None:
        self.stderr_file = open(stderr_path, "wb")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(REPO)) if p)
        env.setdefault("OMP_NUM_THREADS", "1")
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self.stderr_file, env=env)
        self.settings = settings
        self.seq = 0  # messages handed to the writer so far
        # One writer thread: the reader thread answers the server's own requests without
        # ever blocking on a full pipe (the server blocks writing to us meanwhile, and a
        # reader that waits for the writer would deadlock the two).
        self.outbox: queue.Queue = queue.Queue()
        self.writer = threading.Thread(target=self._write, daemon=True)
        self.writer.start()
        self.arrived: deque = deque()  # (message, seq when it arrived)
        self.notifications: Counter = Counter()
        self.internal_logs: list[str] = []
        self.popups: list[str] = []
        self.server_requests = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def write(self, data: bytes) -> None:
        while self.outbox.qsize() > 64 and self.process.poll() is None:  # keep pace with the server
            time.sleep(0.001)
        self.seq += 1
        self.outbox.put(data)

    def _write(self) -> None:
        assert self.process.stdin is not None
        while True:
            data = self.outbox.get()
            try:
                self.process.stdin.write(data)
                self.process.stdin.flush()
            except (BrokenPipeError, ValueError, OSError):
                return

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while (message := read_message(stream)) is not None:
            for item in message if isinstance(message, list) else [message]:
                self._dispatch(item)

    def _dispatch(self, message: dict) -> None:
        method = message.get("method")
        if method is not None and "id" in message:  # the server asks (workspace/configuration, progress)
            self.server_requests += 1
            result: Any = None
            if method == "workspace/configuration":
                result = [self.settings for _ in (message.get("params") or {}).get("items", [])]
            body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
            self.outbox.put(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            return
        if method is not None:
            self.notifications[method] += 1
            text = str((message.get("params") or {}).get("message", ""))
            if method == "window/logMessage" and "internal error" in text:
                self.internal_logs.append(text)
            if method == "window/showMessage":
                self.popups.append(text)
            return
        self.arrived.append((message, self.seq))


class Checker:
    """Matches answers to what was owed and checks each against the reference."""

    def __init__(self, traffic: Traffic) -> None:
        self.traffic = traffic
        self.pending: dict[Any, deque] = defaultdict(deque)
        self.history: dict[str, list[Snapshot]] = defaultdict(list)
        self.figures: Counter = Counter()
        self.examples: dict[str, list[str]] = defaultdict(list)
        self.null_answers_expected = 0
        self.null_answers_possible = 0  # beyond the expected ones
        self.null_answers = 0

    def sent(self, out: Outgoing, seq: int) -> None:
        for expect in out.expects:
            self.pending[expect.id].append(Pending(expect, seq))
            self.figures["requests"] += 1
        self.null_answers_expected += out.null_answers
        self.null_answers_possible += out.maybe_null_answers
        for uri in out.changed:
            document = self.traffic.documents.get(uri)
            self.history[uri].append(Snapshot(seq, document.version if document else None,
                                              document.text if document else None))

    def bad(self, property_name: str, detail: str) -> None:
        self.figures[property_name] += 1
        if len(self.examples[property_name]) < 5:
            self.examples[property_name].append(detail[:300])

    def answer(self, message: dict, seq_received: int) -> None:
        message_id = message.get("id")
        self.figures["answers"] += 1
        if message_id is None:
            self.null_answers += 1
            if message.get("error", {}).get("code") == INTERNAL_ERROR:
                self.bad("internal_errors", json.dumps(message))
            return
        queue = self.pending.get(message_id)
        if not queue:
            self.bad("extra_answers", json.dumps(message))
            return
        owed = queue.popleft()
        if not queue:
            del self.pending[message_id]
        self._check(owed, message, seq_received)

    def _check(self, owed: Pending, message: dict, seq_received: int) -> None:
        expect = owed.expect
        error = message.get("error")
        if error is not None:
            code = error.get("code")
            self.figures[f"error {code}"] += 1
            if code == INTERNAL_ERROR:
                self.bad("internal_errors", json.dumps(message))
            elif expect.check == "error" and code != expect.code:
                self.bad("wrong_answers", f"expected error {expect.code}, got {json.dumps(message)}")
            elif expect.check == "state" :
                self.bad("text_mismatches", f"{expect.uri}: error instead of its state: {json.dumps(error)}")
            return
        result = message.get("result")
        if expect.check == "error":
            self.bad("wrong_answers", f"expected error {expect.code}, got {json.dumps(message)[:200]}")
        elif expect.check == "state":
            if result.get("sha256") != expect.digest or result.get("version") != expect.version:
                self.bad("text_mismatches", f"{expect.uri} v{expect.version}: server v{result.get('version')} "
                         f"length {result.get('length')}, request sent as message {owed.sent_at}")
        elif expect.check == "inline":
            self.figures["suggestions"] += len(result.get("items", []))
            for item in result.get("items", []):
                version = (item.get("command", {}).get("arguments") or [None, {}])[1].get("version")
                self._positions(expect.uri, version, [item["range"]["start"], item["range"]["end"]], owed, seq_received)
        elif expect.check == "completion":
            self.figures["suggestions"] += len(result.get("items", []))
            for item in result.get("items", []):
                version = (item.get("data") or {}).get("version")
                edit = item["textEdit"]
                text = self._positions(expect.uri, version, [edit["range"]["start"], edit["range"]["end"]], owed,
                                       seq_received)
                if text is not None:
                    replaced = _slice(text, edit["range"], self.traffic.encoding)
                    if not edit["newText"].startswith(replaced):
                        self.bad("edit_mismatches", f"replaces {replaced!r} with {edit['newText'][:40]!r}")
        elif expect.check == "next_edit":
            version = result.get("version")
            points = [p for e in result.get("edits", []) for p in (e["range"]["start"], e["range"]["end"])]
            self.figures["next edits"] += len(result.get("edits", []))
            if points:
                self._positions(expect.uri, version, points, owed, seq_received)

    def _positions(self, uri: Optional[str], version: Any, points: list[dict], owed: Pending,
                   seq_received: int) -> Optional[str]:
        """Check `points` against the text the answer names: the one with that version that
        was current at some moment between the request and its answer."""
        self.figures["positions checked"] += len(points)
        candidates = self._current_between(uri, owed.sent_at, seq_received)
        texts = [s.text for s in candidates if s.version == version and s.text is not None]
        if not texts:
            self.bad("out_of_document", f"{uri}: the answer names version {version}, current then: "
                     f"{[s.version for s in candidates]}")
            return None
        for text in texts:
            if all(position_problem(text, p, self.traffic.encoding) is None for p in points):
                return text
        self.bad("out_of_document", f"{uri} v{version}: " + "; ".join(
            filter(None, (position_problem(texts[-1], p, self.traffic.encoding) for p in points))))
        return None

    def _current_between(self, uri: Optional[str], first: int, last: int) -> list[Snapshot]:
        snapshots = self.history.get(uri or "", [])
        out = []
        for index, snapshot in enumerate(snapshots):
            until = snapshots[index + 1].seq if index + 1 < len(snapshots) else None
            if snapshot.seq <= last and (until is None or until > first):
                out.append(snapshot)
        return out

    def prune(self) -> None:
        """Forget texts no outstanding request can name."""
        oldest = min((p.sent_at for queue in self.pending.values() for p in queue), default=None)
        for uri, snapshots in self.history.items():
            keep_from = len(snapshots) - 1
            while keep_from > 0 and oldest is not None and snapshots[keep_from].seq > oldest:
                keep_from -= 1
            if oldest is None:
                keep_from = len(snapshots) - 1
            del snapshots[:keep_from]


def _slice(text: str, rng: dict, encoding: str) -> str:
    from .reference import ReferenceDocument

    document = ReferenceDocument("", "", 0, text)
    start = document.offset(rng["start"]["line"], rng["start"]["character"], encoding)
    end = document.offset(rng["end"]["line"], rng["end"]["character"], encoding)
    return text[start:end]


def run(messages: int, seed: int, model: Optional[str], workdir: Path, progress: bool = False) -> dict:
    traffic = Traffic(seed, SETTINGS)
    checker = Checker(traffic)
    argv = [sys.executable, "-m", "infill_lsp"] + (["--model", model] if model else [])
    session = Session(argv, workdir / "server.err", SETTINGS)
    started = time.perf_counter()
    rss: list[tuple[int, float]] = []
    kinds: Counter = Counter()

    def send(out: Outgoing) -> None:
        session.write(out.data)
        kinds[out.kind] += 1
        checker.sent(out, session.seq)

    def drain() -> None:
        while session.arrived:
            message, seq = session.arrived.popleft()
            checker.answer(message, seq)

    crashed = False
    try:
        init = traffic.initialize()
        send(init)
        deadline = time.monotonic() + 120
        while not session.arrived and time.monotonic() < deadline:
            time.sleep(0.01)
        message, seq = session.arrived[0]
        traffic.encoding = message["result"]["capabilities"].get("positionEncoding", "utf-16")
        drain()
        send(traffic.notify("initialized", {}))
        for out in traffic.open_all():
            send(out)
        sent = 0
        while sent < messages:
            if session.process.poll() is not None:
                crashed = True
                break
            out = traffic.step()
            send(out)
            sent += 1
            for uri in out.changed:
                send(traffic.state_check(uri))
            if out.settle:
                owed = {expect.id for expect in out.expects}
                deadline = time.monotonic() + 60
                while owed & set(checker.pending) and time.monotonic() < deadline and session.process.poll() is None:
                    drain()
                    time.sleep(0.002)
            if sent % 200 == 0:
                drain()
                checker.prune()
            if sent % 1000 == 0:
                value = rss_mb(session.process.pid)
                if value is not None:
                    rss.append((sent, value))
                if progress:
                    print(f"{sent:,} messages, {time.perf_counter() - started:.0f} s, RSS {value:.0f} MB",
                          file=sys.stderr, flush=True)
        # Everything owed must arrive: wait while answers keep coming.
        last_count, quiet_since = -1, time.monotonic()
        while checker.pending and not crashed and time.monotonic() - quiet_since < 120:
            drain()
            if checker.figures["answers"] != last_count:
                last_count, quiet_since = checker.figures["answers"], time.monotonic()
            time.sleep(0.05)
            crashed = session.process.poll() is not None
        drain()
        final_rss = rss_mb(session.process.pid)
        server_counts: dict = {}
        # The end of the session: the server's own counts, shutdown, a request it refuses, exit.
        if not crashed:
            stats = traffic.request("infill/stats", None, "any")
            send(stats)
            deadline = time.monotonic() + 60
            while not server_counts and time.monotonic() < deadline:
                while session.arrived:
                    message, seq = session.arrived.popleft()
                    if message.get("id") == stats.expects[0].id:
                        server_counts = (message.get("result") or {}).get("counts", {})
                    checker.answer(message, seq)
                time.sleep(0.01)
            shutdown = traffic.request("shutdown", None, "any")
            send(shutdown)
            late = traffic.request("infill/stats", None, "error", code=-32600)
            send(late)
            send(traffic.notify("exit", None))
            try:
                exit_code = session.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                session.process.kill()
                exit_code = None
            time.sleep(0.2)
            drain()
        else:
            exit_code = session.process.returncode
    finally:
        if session.process.poll() is None:
            session.process.kill()
        session.stderr_file.close()
    stderr = (workdir / "server.err").read_text(errors="replace")
    lost = sum(len(queue) for queue in checker.pending.values())
    warm = next((value for count, value in rss if count >= max(1000, messages // 10)), rss[0][1] if rss else None)
    figures = checker.figures
    return {
        "command": f"python -m lab.fuzz.lsp_fuzz --messages {messages} --seed {seed}" + (" --tiny" if model else ""),
        "model": "tiny random model" if model else "embedded model",
        "fuzz_messages": messages,
        "messages_sent": session.seq,
        "state_checks": kinds["infill/documentState"],
        "requests": figures["requests"],
        "answers": figures["answers"],
        "seconds": round(time.perf_counter() - started, 1),
        "position_encoding": traffic.encoding,
        "crashes": int(crashed or exit_code not in (0,)),
        "exit_code": exit_code,
        "lost_answers": lost,
        "extra_answers": figures["extra_answers"],
        "wrong_answers": figures["wrong_answers"],
        "internal_errors": figures["internal_errors"] + len(session.internal_logs),
        "out_of_document": figures["out_of_document"],
        "edit_mismatches": figures["edit_mismatches"],
        "text_mismatches": figures["text_mismatches"],
        "tracebacks": stderr.count("Traceback"),
        "positions_checked": figures["positions checked"],
        "suggestions_checked": figures["suggestions"],
        "next_edits_checked": figures["next edits"],
        "null_id_answers": {"expected": checker.null_answers_expected, "possible_more": checker.null_answers_possible,
                            "got": checker.null_answers},
        "popups": len(session.popups),
        "server_counts": server_counts,
        "error_codes": {k.split()[1]: v for k, v in sorted(figures.items()) if k.startswith("error ")},
        "rss_mb": {"after_warmup": _round(warm), "final": _round(final_rss),
                   "max": _round(max((v for _, v in rss), default=None)),
                   "growth": _round(final_rss - warm) if final_rss is not None and warm is not None else None},
        "rss_samples": [(count, round(value, 1)) for count, value in rss],
        "message_kinds": dict(sorted(kinds.items())),
        "examples": {**checker.examples, "tracebacks": _tracebacks(stderr)},
    }


def _tracebacks(stderr: str, limit: int = 3) -> list[str]:
    """The first few tracebacks on the server's stderr, each with the log line before it."""
    out = []
    for block in stderr.split("Traceback")[1: limit + 1]:
        out.append(("Traceback" + block)[-1500:])
    return out


def _round(value: Optional[float]) -> Optional[float]:
    return None if value is None else round(value, 1)


FAILURES = ("crashes", "lost_answers", "extra_answers", "wrong_answers", "internal_errors", "out_of_document",
            "edit_mismatches", "text_mismatches", "tracebacks")


def failures(figures: dict) -> dict:
    """The properties that did not hold (empty when all did)."""
    found = {name: figures[name] for name in FAILURES if figures[name]}
    null = figures["null_id_answers"]
    if not null["expected"] <= null["got"] <= null["expected"] + null["possible_more"]:
        found["null_id_answers"] = null
    return found


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.fuzz.lsp_fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100_000, help="fuzz messages to send (state checks extra)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tiny", action="store_true", help="a tiny random model (fast; the default: embedded)")
    parser.add_argument("--model", default=None, help="a model directory")
    parser.add_argument("--json", metavar="PATH", default=None, help="also write the figures here")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    parser.add_argument("--server-log", metavar="PATH", default=None, help="keep the server's stderr here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="infill-fuzz-") as tmp:
        model = args.model
        if args.tiny and model is None:
            from lab.fixtures.tiny_model import make_tiny_model_dir

            model = str(make_tiny_model_dir(Path(tmp) / "tiny"))
        figures = run(args.messages, args.seed, model, Path(tmp), progress=not args.quiet)
        if args.server_log:
            shutil.copy(Path(tmp) / "server.err", args.server_log)
    text = json.dumps(figures, indent=2, ensure_ascii=False)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    broken = failures(figures)
    if broken:
        print(f"FAILED: {broken}", file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
