"""Live rewrite sessions over WebSocket (`infill serve`), with a browser playground.

Modules: protocol (wire format, error and close codes), document (UTF-16 positions),
scheduler (fair queue before the engine), worker (engine thread), outbox (per-connection
sending with step coalescing), connection (per-socket sessions), pages (static files and
Origin policy), server (the server and `main`), testing (server in a thread), loadtest.
"""
