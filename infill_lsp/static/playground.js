// The infill playground: one live session over the protocol in docs/live-protocol.md.
// Plain script, no build step and nothing fetched from elsewhere (the page's CSP forbids it).
"use strict";

(function () {
  const PROTOCOL = 1;
  const SESSION = "playground";
  const CONTEXT_LINES = 4; // prefix/suffix lines shown around the live canvas
  const SYNC_DELAY_MS = 40; // typing is batched into one edit per pause (the server rate-limits)

  const $ = (id) => document.getElementById(id);
  const editor = $("editor");
  const canvasView = $("canvas");
  const stepsList = $("steps");
  const statsView = $("stats");
  const summaryView = $("summary");
  const statusView = $("status");
  const errorView = $("error");
  const runButton = $("run");
  const cancelButton = $("cancel");
  const tokenInput = $("token");
  const connectionSection = $("connection");
  const emptyView = $("empty");
  const explanationView = $("explanation");
  const uncheckedBox = $("unchecked-box");
  const uncheckedView = $("unchecked");
  // Stop reasons where the syntax check hid what the model wrote (infill_lsp/empty_answer.py
  // REFUSED): the page then asks once more without the check, to show that text.
  const REFUSED = new Set(["rejected", "vetoed"]);

  let ws = null;
  let sessionOpen = false;
  let synced = ""; // the text the server's copy holds once our sent edits apply
  let syncTimer = null;
  let nextRequestId = 1;
  let pending = null; // {id, start, end, text, prefixTail, suffixHead, canvas, stepsRendered}
  let probe = null; // {id}: the unchecked run after a refused answer, shown, never inserted

  // -- helpers ---------------------------------------------------------------------------

  // (line, character) of a UTF-16 offset: the protocol counts characters as JavaScript does.
  function positionAt(text, offset) {
    let line = 0;
    let lineStart = 0;
    for (let i = text.indexOf("\n"); i !== -1 && i < offset; i = text.indexOf("\n", i + 1)) {
      line += 1;
      lineStart = i + 1;
    }
    return { line: line, character: offset - lineStart };
  }

  function rangeOf(text, start, end) {
    return { start: positionAt(text, start), end: positionAt(text, end) };
  }

  function setState(state, label) {
    document.body.dataset.state = state;
    statusView.textContent = label;
    const ready = state === "ready" || state === "done";
    runButton.disabled = !ready && state !== "running";
    cancelButton.disabled = state !== "running";
  }

  function showError(message) {
    errorView.textContent = message;
    errorView.hidden = !message;
  }

  function showEmpty(explanation) {
    explanationView.textContent = explanation;
    emptyView.hidden = !explanation;
    uncheckedBox.hidden = true;
    uncheckedView.textContent = "";
  }

  // The server refused the token: say so and open the Connection section at the token field.
  // Its message says where the right token is (printed at start, or given with --token).
  function askForToken(message) {
    showError(`${message}. Enter it in the token field under Connection (now open) and press Connect.`);
    connectionSection.open = true;
    tokenInput.focus();
    tokenInput.select();
  }

  function send(message) {
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(message));
  }

  function settings() {
    const maxTokens = Math.max(1, Math.min(256, parseInt($("max-tokens").value, 10) || 32));
    return { max_tokens: maxTokens };
  }

  // -- keeping the server's copy of the document in step ----------------------------------

  function flushEdits() {
    if (syncTimer !== null) {
      clearTimeout(syncTimer);
      syncTimer = null;
    }
    const now = editor.value;
    if (!sessionOpen || now === synced) return;
    // One edit for the changed span: the common prefix and suffix are untouched.
    let head = 0;
    const limit = Math.min(now.length, synced.length);
    while (head < limit && now.charCodeAt(head) === synced.charCodeAt(head)) head++;
    let tail = 0;
    while (tail < limit - head &&
           now.charCodeAt(now.length - 1 - tail) === synced.charCodeAt(synced.length - 1 - tail)) tail++;
    const range = rangeOf(synced, head, synced.length - tail);
    send({ type: "edit", session: SESSION, edits: [{ range: range, text: now.slice(head, now.length - tail) }] });
    synced = now;
  }

  function scheduleSync() {
    if (syncTimer === null) syncTimer = setTimeout(flushEdits, SYNC_DELAY_MS);
  }

  // -- requests --------------------------------------------------------------------------

  function requestInfill() {
    if (!sessionOpen) return;
    flushEdits();
    const text = editor.value;
    const start = editor.selectionStart;
    const end = editor.selectionEnd;
    const id = nextRequestId++;
    probe = null;
    showEmpty("");
    const before = text.slice(0, start).split("\n");
    const after = text.slice(end).split("\n");
    pending = {
      id: id, start: start, end: end, text: text,
      prefixTail: before.slice(-CONTEXT_LINES).join("\n"),
      suffixHead: after.slice(0, CONTEXT_LINES).join("\n"),
      canvas: [], fresh: new Set(), edited: new Set(), stepsRendered: 0, lastPass: 0,
    };
    stepsList.replaceChildren();
    statsView.textContent = "";
    summaryView.textContent = start === end ? "infill at cursor" : "rewrite of selection";
    showError("");
    renderCanvas();
    setState("running", "denoising…");
    send({ type: "infill", session: SESSION, id: id, range: rangeOf(text, start, end), settings: settings() });
  }

  function renderCanvas() {
    const parts = [];
    const context = (text) => {
      const span = document.createElement("span");
      span.className = "context";
      span.textContent = text;
      return span;
    };
    if (pending) {
      parts.push(context(pending.prefixTail));
      pending.canvas.forEach((piece, position) => {
        const span = document.createElement("span");
        span.className = "tok";
        span.dataset.position = String(position);
        if (piece === null) {
          span.classList.add("masked");
        } else if (piece === "") {
          span.classList.add("eom");
          span.textContent = pending.fresh.has(position) ? "\u220e" : "";
        } else {
          span.textContent = piece;
          const confidence = pending.confidence ? pending.confidence[position] : undefined;
          if (confidence !== undefined) span.style.setProperty("--conf", String(confidence));
        }
        if (pending.fresh.has(position)) span.classList.add("fresh");
        if (pending.edited.has(position)) span.classList.add("edited");
        parts.push(span);
      });
      parts.push(context(pending.suffixHead));
    }
    canvasView.replaceChildren(...parts);
    canvasView.dataset.masked = String(pending ? pending.canvas.filter((piece) => piece === null).length : 0);
    canvasView.dataset.steps = String(pending ? pending.stepsRendered : 0);
  }

  function onStep(frame) {
    if (!pending || frame.id !== pending.id) return;
    pending.canvas = frame.canvas;
    pending.confidence = pending.confidence || {};
    pending.fresh = new Set();
    pending.edited = new Set();
    for (const change of frame.changes) {
      pending.confidence[change.position] = change.confidence;
      (change.kind === "edit" ? pending.edited : pending.fresh).add(change.position);
    }
    pending.stepsRendered += 1;
    pending.lastPass = frame.step; // passes are numbered on across candidates and merged frames
    renderCanvas(); // synchronously, so every step frame becomes a rendering of its own
    const item = document.createElement("li");
    item.className = "step";
    const merged = frame.coalesced ? ` (${frame.coalesced + 1} passes merged)` : "";
    item.textContent = `pass ${frame.step}: ${frame.changes.length} tokens, ${frame.masked} masked, ` +
      `${frame.ms.toFixed(1)} ms${merged}`;
    stepsList.appendChild(item);
    summaryView.textContent = `${frame.masked} masked · ${frame.ms.toFixed(0)} ms`;
  }

  function onResult(frame) {
    if (!pending || frame.id !== pending.id) return;
    const request = pending;
    const s = frame.stats;
    // `forwards` counts the context's encoding as a model pass too; the list shows only the
    // canvas passes, so the line counts those and names the encoding apart ("4 passes" over
    // a list of 3 was the encoding counted as a pass).
    const passes = request.lastPass;
    const encoding = s.forwards > passes ? ` + context encoding (${s.forwards} forwards)` : "";
    statsView.textContent = `${s.tokens} tokens in ${passes} ${passes === 1 ? "pass" : "passes"}${encoding} ` +
      `(${s.tokens_per_forward.toFixed(2)} tokens/forward) · ${s.ms.toFixed(1)} ms engine · ` +
      `${frame.elapsed_ms.toFixed(1)} ms total · ${s.stop_reason}`;
    summaryView.textContent = "done";
    pending.fresh = new Set();
    pending.edited = new Set();
    // The last pass's canvas is not always the answer: the syntax check may have cut or
    // polished it, or a second candidate written it. Show exactly what goes into the editor.
    pending.canvas = frame.text ? [frame.text] : [];
    pending.confidence = {};
    renderCanvas();
    pending = null;
    // Apply only if the text is still what the request saw (an edit would have cancelled it).
    if (editor.value === request.text) {
      editor.setRangeText(frame.text, request.start, request.end, "end");
      editor.focus();
      flushEdits();
    }
    // Nothing to insert: say why, in the words `infill complete` prints (the server's
    // `explanation`), and after a refusal show what the model wrote without the check.
    showEmpty(frame.text.trim() ? "" : (frame.explanation || `no suggestion (${s.stop_reason})`));
    if (!frame.text.trim() && REFUSED.has(s.stop_reason) && editor.value === request.text) {
      probe = { id: nextRequestId++ };
      send({ type: "infill", session: SESSION, id: probe.id, range: rangeOf(request.text, request.start, request.end),
             settings: Object.assign(settings(), { constrained: false }) });
    }
    setState("done", "done");
  }

  function onProbeResult(frame) {
    probe = null;
    if (frame.text.trim()) {
      uncheckedView.textContent = frame.text;
      uncheckedBox.hidden = false;
    } else {
      explanationView.textContent += " (without the syntax check the model writes nothing here either)";
    }
  }

  function onCancelled(frame) {
    if (probe && frame.id === probe.id) probe = null;
    if (!pending || frame.id !== pending.id) return;
    pending = null;
    summaryView.textContent = `cancelled (${frame.reason})`;
    setState("ready", "ready");
  }

  function onError(frame) {
    if (probe && frame.id === probe.id) {
      probe = null;
      return; // the unchecked text is a nicety: the answer and its explanation are shown already
    }
    if (frame.code === "unauthorized") {
      askForToken(frame.message);
      return;
    }
    showError(`${frame.code}: ${frame.message}`);
    if (pending && frame.id === pending.id) {
      pending = null;
      setState("ready", "ready");
    }
  }

  // -- connection ---------------------------------------------------------------------------

  function connect() {
    if (ws) ws.close(1000, "reconnecting");
    sessionOpen = false;
    pending = null;
    probe = null;
    showError("");
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(`${scheme}://${location.host}/ws`);
    ws = socket;
    setState("connecting", "connecting…");
    socket.onmessage = (event) => {
      let frame;
      try {
        frame = JSON.parse(event.data);
      } catch (err) {
        showError("the server sent a frame that is not JSON");
        return;
      }
      switch (frame.type) {
        case "hello":
          $("model").textContent = frame.model;
          synced = editor.value;
          send({ type: "open", session: SESSION, protocol: PROTOCOL, token: tokenInput.value,
                 text: synced, language: $("language").value || null });
          break;
        case "opened":
          sessionOpen = true;
          setState("ready", "ready");
          flushEdits(); // anything typed while the session was opening
          break;
        case "step": onStep(frame); break; // a probe's steps match no pending request: not drawn
        case "result":
          if (probe && frame.id === probe.id) onProbeResult(frame);
          else onResult(frame);
          break;
        case "cancelled": onCancelled(frame); break;
        case "error": onError(frame); break;
        default: break; // queued, edited, closed: nothing to show
      }
    };
    socket.onclose = (event) => {
      if (ws !== socket) return;
      sessionOpen = false;
      const reason = event.reason ? `: ${event.reason}` : "";
      setState("closed", `disconnected (${event.code}${reason})`);
    };
  }

  // -- wiring ---------------------------------------------------------------------------------

  const fromHash = new URLSearchParams(location.hash.slice(1)).get("token");
  if (fromHash) tokenInput.value = fromHash;
  // The preset's cursor: in its hole (the textarea's data-cursor-after names the text before it).
  const cursorAfter = editor.dataset.cursorAfter;
  const hole = cursorAfter ? editor.value.indexOf(cursorAfter) : -1;
  if (hole !== -1) {
    editor.setSelectionRange(hole + cursorAfter.length, hole + cursorAfter.length);
    editor.focus();
  }

  editor.addEventListener("input", scheduleSync);
  editor.addEventListener("keydown", (event) => {
    if ((event.ctrlKey || event.metaKey) && event.key === "Enter") {
      event.preventDefault();
      requestInfill();
    }
  });
  runButton.addEventListener("click", requestInfill);
  cancelButton.addEventListener("click", () => send({ type: "cancel", session: SESSION }));
  $("connection-form").addEventListener("submit", (event) => {
    event.preventDefault(); // nothing is posted anywhere: the token goes into the `open` message
    connect();
  });
  $("language").addEventListener("change", connect); // the language is fixed per session
  connect();
})();
