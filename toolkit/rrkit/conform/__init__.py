"""`rrkit conform`: judge any Responses client by what the fake server sees it do in each scenario of a catalogue
(the situations a client must survive: faults, failures, refusals, tool loops), against the musts of the protocol.

The names below load on first use (PEP 562), so that a client run under `rrkit conform`
(`python -m rrkit.conform.codex_client`) starts without the server and the judge."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from ..drive import ClientEnd, ClientUnderTest, CommandClient, FunctionClient, ReferenceClient
    from ..protocol.exceptions import ConformError
    from .checks import ConformRun, ScenarioResult, Verdict, judge
    from .drive import play
    from .profile import Profile, load_profile
    from .report import ConformReport, run
    from .scenario import Expectation, Scenario, catalogue, load_scenario, select
    from .timeouts import DEFAULT_TIMEOUT

_HOMES = {
    ".checks": ("ConformRun", "ScenarioResult", "Verdict", "judge"),
    "..drive": ("ClientEnd", "ClientUnderTest", "CommandClient", "FunctionClient", "ReferenceClient"),
    ".drive": ("play",),
    ".profile": ("Profile", "load_profile"),
    ".report": ("ConformReport", "run"),
    ".timeouts": ("DEFAULT_TIMEOUT",),
    "..protocol.exceptions": ("ConformError",),
    ".scenario": ("Expectation", "Scenario", "catalogue", "load_scenario", "select"),
}
__all__ = [
    "DEFAULT_TIMEOUT",
    "ClientEnd",
    "ClientUnderTest",
    "CommandClient",
    "ConformError",
    "ConformReport",
    "ConformRun",
    "Expectation",
    "FunctionClient",
    "Profile",
    "ReferenceClient",
    "Scenario",
    "ScenarioResult",
    "Verdict",
    "catalogue",
    "judge",
    "load_profile",
    "load_scenario",
    "play",
    "run",
    "select",
]


__getattr__, __dir__ = lazy_exports(__name__, _HOMES, __all__)
