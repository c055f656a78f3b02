"""Live rewrite sessions over WebSocket (`infill serve`), with a browser playground.

Modules: protocol (wire format, error and close codes), document (UTF-16 positions via
the engine's codec), frames (engine output as frames), outbox (per-connection sending with
step coalescing), connection (per-socket sessions), pages (static files and Origin
policy), server (the server and `main`). Model work runs on the engine's worker
(engine/worker.py: fair queue, supersede, cancel). The load test and a server-in-a-thread
fixture are in lab/ (lab/loadtest/live.py, lab/fixtures/live_server.py).
"""
