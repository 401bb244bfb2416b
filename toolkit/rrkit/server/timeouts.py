"""How long the fake server keeps an idle HTTP connection open for its next request."""

KEEP_ALIVE_SECONDS = 75.0
"""nginx's default (`keepalive_timeout 75s`), above the 60 s of the common cloud balancers and far above the
few seconds of pooled clients (httpx 5 s, Node's undici 4 s), which then always close an idle connection first.
uvicorn's own 5 s runs from the end of the server's write: a client busy with 256 streams has often not read the
response by then, and its next request on that connection meets a reset."""
