"""`infill serve`: live rewrite sessions over WebSocket, a browser playground and an
OpenAI-style completions API, all on one port.

Modules: protocol (wire format, error and close codes), document (UTF-16 positions via
the engine's codec), frames (engine output as frames), outbox (per-connection sending with
step coalescing), connection (per-socket sessions), channel (the WebSocket as a
connection sees it), openai_api (the HTTP API's request and answer shapes), hub (what all
requests to one engine share), app (the ASGI app: routes, token and Origin checks), pages
(static files and Origin policy), server (uvicorn in this process, and `main`), cluster
(the same app on Ray Serve replicas). Model work runs on the engine's worker
(engine/worker.py: fair queue, supersede, cancel). The load tests and a server-in-a-thread
fixture are in lab/ (lab/loadtest/, lab/fixtures/live_server.py).
"""
