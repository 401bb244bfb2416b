"""`rrkit conform --server URL`: a battery of requests sent to any Responses server, each answer checked for
shape, order and state (never for words), as findings with their place and severity. The names load on first use
(PEP 562): listing the probes loads no HTTP or WebSocket client."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...lazy import lazy_exports

if TYPE_CHECKING:
    from ..listing import PROBES
    from .checks import CHECKS, accept_key
    from .drive import Target
    from .probe import Expect, Probe, ProbeStep, load_probe, probe_catalogue, select_probes
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

_HOMES = {
    "..listing": ("PROBES",),
    ".checks": ("CHECKS", "accept_key"),
    ".drive": ("Target",),
    ".probe": ("Expect", "Probe", "ProbeStep", "load_probe", "probe_catalogue", "select_probes"),
    ".report": ("ProbeResult", "ServerReport", "judge_server", "run_server"),
}

__getattr__, __dir__ = lazy_exports(__name__, _HOMES, __all__)
