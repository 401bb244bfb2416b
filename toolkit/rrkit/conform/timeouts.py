"""How long the referee waits, on both sides: a client's whole run per scenario, a server's answer per step."""

from __future__ import annotations

DEFAULT_TIMEOUT = 150.0
"""Seconds a client gets per scenario and transport: well above the stream idle timeouts clients commonly use
(60 s in LlamaIndex and many HTTP stacks), so that a client about to give up on a stall is not stopped first and
judged as hanging."""
ANSWER_TIMEOUT = 30.0
"""Seconds a server's answer to one probe step may take (`rrkit conform --server`)."""
RUN_BUDGET = 600.0
"""Seconds a whole `rrkit conform --server` run may take: a server that answers slowly, or never, costs at most
this (the probes left are reported not run), not every step's timeout over the whole battery."""
