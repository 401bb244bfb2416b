"""`rrkit conform`: judge any Responses client by what the fake server sees it do in each scenario of a catalogue
(the situations a client must survive: faults, failures, refusals, tool loops), against the musts of the protocol."""

from .checks import ConformRun, ScenarioResult, Verdict, judge
from .drive import ClientEnd, CommandClient, ConformClient, ReferenceClient, play
from .profile import Profile, load_profile
from .report import DEFAULT_TIMEOUT, ConformReport, run
from .scenario import ConformError, Expectation, Scenario, catalogue, load_scenario, select

__all__ = [
    "DEFAULT_TIMEOUT",
    "ClientEnd",
    "CommandClient",
    "ConformClient",
    "ConformError",
    "ConformReport",
    "ConformRun",
    "Expectation",
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
