"""`rrkit conform --server URL`: a battery of requests sent to any Responses server, each answer checked for
shape, order and state (never for words), as findings with their place and severity."""

from __future__ import annotations

from .checks import CHECKS, accept_key
from .drive import Target
from .probe import PROBES, Expect, Probe, ProbeStep, load_probe, probe_catalogue, select_probes
from .report import ProbeResult, ServerReport, judge_server, run_server

__all__ = [
    "CHECKS",
    "PROBES",
    "Expect",
    "Probe",
    "ProbeResult",
    "ProbeStep",
    "ServerReport",
    "Target",
    "accept_key",
    "judge_server",
    "load_probe",
    "probe_catalogue",
    "run_server",
    "select_probes",
]
