"""`rrkit conform`: the catalogue loads; the reference client and a minimal correct client hold every must; each
deliberately broken client breaks exactly the musts it breaks; the report as JSON and JUnit; the command's exit
statuses; scenario files with errors are named with the place and the problem."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import httpx
import pytest

from rrkit.client import turn
from rrkit.conform import (
    CommandClient,
    ConformError,
    ConformReport,
    FunctionClient,
    ReferenceClient,
    Scenario,
    catalogue,
    load_profile,
    load_scenario,
    run,
    select,
)
from rrkit.conform.scenario import CHECKS
from rrkit.drive import as_client
from rrkit.files.atomic import write_page
from rrkit.protocol.errors import FAILURE_CODES, RECONNECT_CODES
from rrkit.protocol.incremental import Decision
from rrkit.protocol.vocabulary import Transport
from rrkit.report.html import CSP, to_html
from rrkit.report.json_text import to_json
from rrkit.report.junit import to_junit

from ..chromium import HOSTILE, dump_dom, needs_chromium
from ..docs_text import code_after
from . import minimal_client as minimal

MINIMAL_CLIENT = Path(__file__).with_name("minimal_client.py")
SDK_CLIENT = Path(__file__).with_name("sdk_client.py")
SDK_TIMEOUT = 20.0
"""Seconds an SDK client's run may take: a run that hangs on a silent stream is stopped after it (every other run
takes under 2 s on an idle machine)."""


def minimal_client(broken: str = "") -> CommandClient:
    return CommandClient(
        [
            sys.executable,
            "-c",
            f"import os, runpy; os.environ['BROKEN'] = {broken!r}; "
            f"runpy.run_path({str(MINIMAL_CLIENT)!r}, run_name='__main__')",
        ]
    )


def minimal_in_process(broken: str) -> FunctionClient:
    """The same client called in this process (no interpreter to start per run), broken the same way."""

    def minimal_client(env: dict[str, str]) -> bool:
        return minimal.main({**env, "BROKEN": broken}) == 0

    return FunctionClient(minimal_client)


def write_html(report: ConformReport, path: Path) -> Path:
    """`rrkit conform --html`'s page of `report`."""
    return write_page(to_html(report.to_report()), path)


def broken_musts(report: ConformReport) -> set[tuple[str, str]]:
    return {(verdict.scenario, verdict.expectation) for verdict in report.failures}


@pytest.fixture(scope="module")
def scenarios() -> list[Scenario]:
    return catalogue()


def test_the_catalogue_and_the_profiles_cover_both_transports_and_every_check_kind() -> None:
    scenarios = catalogue(opt_in=True)  # the opt-in ones too: their checks count
    names = [scenario.name for scenario in scenarios]
    assert len(names) == len(set(names)) >= 28
    assert {transport for scenario in scenarios for transport in scenario.transports} == {"http", "ws"}
    profiles = [load_profile(name) for name in ("codex", "openai-sdk")]
    for profile in profiles:
        profile.check_scenarios(scenarios, profile.name)
    rules = [rule for profile in profiles for scenario_rules in profile.rules.values() for rule in scenario_rules]
    rules += [rule for profile in profiles for rule in profile.every]
    used = {must.check for scenario in scenarios for must in scenario.musts} | {rule.check for rule in rules}
    # `answer` judges script files (`rrkit conform --scenario`, what `rrkit explore` writes): tests/explore holds it
    assert used == set(CHECKS) - {"answer"}
    for scenario in scenarios:
        assert scenario.path is not None and scenario.path.stem == scenario.name
        assert all(must.why.strip() for must in scenario.musts)


def test_the_list_shows_each_scenario_profile_and_probe_as_its_model_reads_it_without_building_one() -> None:
    from rrkit.conform.listing import listed_probes, listed_profiles, listed_scenarios
    from rrkit.conform.profile import shipped_profiles
    from rrkit.conform.server.probe import probe_catalogue

    modelled = [
        (scenario.name, scenario.description, tuple(scenario.transports), scenario.opt_in)
        for scenario in catalogue(opt_in=True)
    ]
    assert [(s.name, s.description, s.transports, s.opt_in) for s in listed_scenarios()] == modelled
    profiles = [load_profile(name) for name in shipped_profiles()]
    assert [(p.name, p.description) for p in listed_profiles()] == [(p.name, p.description) for p in profiles]
    assert [s.name for s in listed_scenarios(("text", "tool-loop"))] == ["text", "tool-loop"]
    probes = [(p.name, p.description, tuple(p.transports)) for p in probe_catalogue()]
    assert [(p.name, p.description, p.transports) for p in listed_probes()] == probes
    with pytest.raises(ConformError, match=r"no scenario named 'txet'.*conform --list"):
        listed_scenarios(("txet",))


def test_the_reference_client_keeps_every_must_and_the_codex_profile_over_both_transports(
    scenarios: list[Scenario],
) -> None:
    report = run(scenarios=scenarios, profile="codex")
    assert report.ok, [(v.scenario, v.transport, v.expectation, v.seen) for v in report.failures]
    ran = {(result.run.scenario, result.run.transport) for result in report.results}
    assert ran == {(scenario.name, transport) for scenario in scenarios for transport in scenario.transports}
    profiled = [verdict for result in report.results for verdict in result.verdicts if verdict.strength != "must"]
    assert {verdict.scenario for verdict in profiled} == {scenario.name for scenario in scenarios}
    assert sum(verdict.strength == "must" for result in report.results for verdict in result.verdicts) > len(ran)


def test_the_catalogue_fails_a_response_with_every_kind_of_failure_of_the_error_catalogue(
    scenarios: list[Scenario],
) -> None:
    """Each kind of `response.failed` the error catalogue knows (its codes of one kind are one classification for a
    client: the 14 image codes, say, are retried alike), a code it does not, and each code that means "new socket,
    full request" is played by some scenario."""
    failed, refused = set(), set()
    for scenario in scenarios:
        replies = [*scenario.script.responses, *([scenario.script.default] if scenario.script.default else [])]
        failed |= {reply.fail.code for reply in replies if reply.fail is not None}
        refused |= {part.code for reply in replies for part in (reply.reject, reply.error_frame) if part is not None}
    known = {code: (entry.kind, entry.retryable) for code, entry in FAILURE_CODES.items()}
    assert set(known.values()) <= {known[code] for code in failed if code in known}
    assert failed - set(FAILURE_CODES)  # and one no client knows
    assert refused >= RECONNECT_CODES


@pytest.mark.matrix
@pytest.mark.parametrize("transport", ["http", "ws"])
def test_the_official_python_sdk_keeps_every_must_and_the_openai_sdk_profile_but_hangs_on_a_silent_socket(
    scenarios: list[Scenario], transport: Transport
) -> None:
    """Over HTTP its read timeout (set to 5 s) ends a stalled stream; its WebSocket connection (`responses.connect()`,
    openai 3.57) reads without one, so a silent socket hangs the caller until `rrkit conform` stops it: the one
    broken must, explained in docs/conformance.md."""
    report = run(
        CommandClient([sys.executable, str(SDK_CLIENT)]),
        transports=(transport,),
        profile="openai-sdk",
        timeout=SDK_TIMEOUT,
    )
    broken = {(v.scenario, v.expectation) for v in report.failures}
    seen = {result.run.scenario: result.run for result in report.results}
    if transport == "http":
        assert not broken
        assert "Didn't receive a `response.completed` event" in seen["ends-before-terminal"].detail
        assert "APITimeoutError" in seen["stall"].detail
        assert [str(attempt) for attempt in seen["http-429-retry-after"].attempts][1].startswith("<named>")
    else:
        assert broken == {("stall", "ends on its own")}
        assert [str(attempt) for attempt in seen["tool-loop"].attempts][1].endswith("ws incremental -> completed")


def test_a_client_that_never_sends_incremental_requests_breaks_only_the_codex_flows_that_continue_a_response(
    scenarios: list[Scenario], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(turn, "decide", lambda *args: Decision(None, "this client never sends a delta"))
    report = run(scenarios=scenarios, transports=("ws",), profile="codex")
    assert all(verdict.strength != "must" for verdict in report.failures)  # the protocol allows it
    codex = load_profile("codex")
    continuing = {  # the codex flows over WebSocket with an incremental request in them
        (name, rule.label)
        for name, rules in codex.rules.items()
        for rule in rules
        if rule.check == "flow" and rule.applies("ws") and any("ws incremental" in step for step in rule.flow or ())
    }
    assert len(continuing) >= 10 and broken_musts(report) == continuing


def test_a_minimal_correct_http_client_holds_every_must_no_false_alarm(scenarios: list[Scenario]) -> None:
    """In process here; the conform guide's pytest example runs the same client as a command over the catalogue."""
    report = run(minimal_in_process(""), scenarios=scenarios, transports=("http",))
    assert report.ok, [(v.scenario, v.expectation, v.seen) for v in report.failures]
    assert len(report.results) == sum("http" in scenario.transports for scenario in scenarios)


@pytest.mark.parametrize(
    ("broken", "breaks"),
    [
        (
            "cut-is-answer",
            {
                ("drop-mid-stream", "answered"),
                ("ends-before-terminal", "answered"),
                ("sse-error-event", "answered"),
                ("stall", "answered"),
                ("turn-state", "answered"),
            },
        ),
        ("retry-400", {("http-400", "retries <= 0")}),
        (
            "ignore-retry-after",
            {
                ("http-429-retry-after", "waits the named 1 s before a retry"),
                ("http-503-retry-after", "waits the named 1 s before a retry"),
            },
        ),
        (
            "drop-call-id",  # the fake refuses an output for a call it never issued, as the service does
            {("tool-loop", "tool_output"), ("tool-loop", "outcome is completed"), ("turn-state", "tool_output")},
        ),
    ],
)
def test_a_broken_client_breaks_exactly_the_musts_it_breaks(
    scenarios: list[Scenario], broken: str, breaks: set[tuple[str, str]]
) -> None:
    report = run(minimal_in_process(broken), scenarios=scenarios, transports=("http",))
    assert broken_musts(report) == breaks
    for verdict in report.failures:
        assert verdict.why and verdict.seen  # what a correct client does, and what this one did


def test_a_client_without_an_idle_timeout_hangs_on_a_stall_and_breaks_only_ends_on_its_own(
    scenarios: list[Scenario],
) -> None:
    chosen = select(scenarios, ("stall", "text"))
    report = run(minimal_client("no-idle-timeout"), scenarios=chosen, transports=("http",), timeout=5)
    assert broken_musts(report) == {("stall", "ends on its own")}
    (stalled,) = [result.run for result in report.results if result.run.scenario == "stall"]
    assert stalled.outcome == "timed out" and stalled.flow == "http full -> stalled"


def sse_turn(env: dict[str, str]) -> bool:
    """One streamed request with httpx: whether it ended with response.completed."""
    body = {"model": "gpt-test", "input": "hi", "stream": True}
    types = []
    with (
        contextlib.suppress(httpx.TransportError),
        httpx.stream("POST", env["OPENAI_BASE_URL"] + "/responses", json=body, timeout=30, trust_env=False) as response,
    ):
        types = [json.loads(line[5:])["type"] for line in response.iter_lines() if line.startswith("data:")]
    return "response.completed" in types


def test_a_python_callable_is_judged_as_a_command_is_with_the_same_environment(scenarios: list[Scenario]) -> None:
    told: list[dict[str, str]] = []

    def careful(env: dict[str, str]) -> None:
        told.append(env)
        if not sse_turn(env):
            raise RuntimeError("the stream ended without response.completed")

    chosen = select(scenarios, ("text", "drop-mid-stream"))
    report = run(careful, scenarios=chosen, transports=("http",))
    assert report.ok and report.client.endswith("careful")
    assert [env["RRKIT_SCENARIO"] for env in told] == ["drop-mid-stream", "text"]
    assert {env["RRKIT_TRANSPORT"] for env in told} == {"http"} and told[0]["OPENAI_BASE_URL"].startswith("http://")
    (cut,) = [result.run for result in report.results if result.run.scenario == "drop-mid-stream"]
    assert cut.outcome == "failed" and "RuntimeError: the stream ended without response.completed" in cut.detail

    careless = run(lambda env: sse_turn(env) or None, scenarios=chosen, transports=("http",))  # a cut is an answer
    assert broken_musts(careless) == {("drop-mid-stream", "answered")}


def test_a_client_is_a_command_list_a_callable_or_a_conform_client_and_nothing_else() -> None:
    assert isinstance(as_client([sys.executable, "client.py"]), CommandClient)
    assert isinstance(as_client(None), ReferenceClient)
    for wrong in ([], ["python", 3], 42):
        with pytest.raises(TypeError, match="client"):
            as_client(wrong)  # type: ignore[arg-type]


def test_a_profile_rule_for_every_scenario_is_judged_in_each_and_names_the_header_missing(
    scenarios: list[Scenario],
) -> None:
    """The codex profile's identity headers: a client that sends none breaks that rule in every scenario."""
    report = run(minimal_in_process(""), only=("text", "http-500"), transports=("http",), profile="codex")
    identity = "sends session-id, thread-id, x-client-request-id, x-codex-window-id, x-codex-turn-metadata"
    assert broken_musts(report) == {("text", identity), ("http-500", identity)}
    (refused,) = [v for v in report.failures if v.scenario == "http-500"]
    assert refused.seen.startswith("2 of 2 attempt(s) without some; the first, http full -> refused 500: no session-id")
    assert all(verdict.strength == "profile codex" for verdict in report.failures)


def test_the_junit_report_has_one_case_per_scenario_run_and_a_failure_per_broken_must(
    scenarios: list[Scenario],
) -> None:
    report = run(minimal_client("retry-400"), scenarios=select(scenarios, ("http-400", "text")), transports=("http",))
    suite = ElementTree.fromstring(to_junit(report.to_report()))
    assert suite.tag == "testsuite" and suite.get("tests") == "2" and suite.get("failures") == "1"
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert set(cases) == {"http-400", "text"}
    (failure,) = cases["http-400"].iter("failure")
    assert (failure.get("message") or "").startswith("retries <= 0 (must): 4 retries")
    assert "400" in (failure.text or "")
    assert not list(cases["text"].iter("failure"))


def test_the_json_report_lists_each_verdict_with_what_was_seen(scenarios: list[Scenario]) -> None:
    report = run(scenarios=select(scenarios, ("http-500",)), transports=("http",))
    data = json.loads(to_json(report.to_report()))
    assert data["subject"] == "the reference client" and data["ok"] is True
    (result,) = data["detail"]["results"]
    assert result["flow"] == ["http full -> refused 500", "<backoff> http full -> completed"]
    (case,) = data["cases"]
    assert case["findings"] == [] and [held["rule"] for held in case["held"]] == ["answered"]
    assert case["held"][0]["evidence"] == "the client's run completed; the last response: completed"


def test_the_command_gets_the_scenario_and_transport_in_its_environment(
    tmp_path: Path, scenarios: list[Scenario]
) -> None:
    seen = tmp_path / "env.json"
    program = (
        "import json, os, sys\n"
        f"json.dump({{k: os.environ.get(k) for k in ('OPENAI_BASE_URL', 'RRKIT_HTTP_URL', 'RRKIT_WS_URL', "
        f"'RRKIT_SCENARIO', 'RRKIT_TRANSPORT')}}, open({str(seen)!r}, 'w'))\n"
        "sys.exit(3)\n"
    )
    report = run(
        CommandClient([sys.executable, "-c", program]), scenarios=select(scenarios, ("text",)), transports=("ws",)
    )
    env = json.loads(seen.read_text())
    assert env["RRKIT_SCENARIO"] == "text" and env["RRKIT_TRANSPORT"] == "ws"
    assert env["OPENAI_BASE_URL"] == env["RRKIT_HTTP_URL"] and env["RRKIT_WS_URL"].startswith("ws://127.0.0.1:")
    (result,) = report.results
    assert result.run.outcome == "failed" and "exit status 3" in result.run.detail
    # it sent no request: no must holds (a verdict is never better than what was observed)
    assert broken_musts(report) == {("text", "outcome is completed"), ("text", "retries <= 0")}


def rrkit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rrkit", *args], capture_output=True, text=True, timeout=300)


def test_conform_list_names_every_scenario_and_exits_0(scenarios: list[Scenario]) -> None:
    done = rrkit("conform", "--list")
    assert done.returncode == 0, done.stderr
    for scenario in scenarios:
        assert scenario.name in done.stdout


def test_conform_exits_1_naming_the_broken_must_and_writes_junit(tmp_path: Path) -> None:
    junit = tmp_path / "conform.xml"
    command = [sys.executable, str(MINIMAL_CLIENT)]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rrkit",
            "conform",
            "--only",
            "http-400",
            "--transport",
            "http",
            "--junit",
            str(junit),
            "--",
            *command,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "BROKEN": "retry-400"},
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAILED" in done.stdout and "a 400 says the request itself is wrong" in done.stdout
    assert "http-400 [http] FAILED" in done.stderr  # the progress lines
    assert ElementTree.parse(junit).getroot().get("failures") == "1"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("conform", "--only", "drop-mid-stram"), "did you mean 'drop-mid-stream'?"),
        (("conform", "--"), "nothing after `--`"),
        (("conform", "--transport", "carrier-pigeon"), "carrier-pigeon"),
    ],
)
def test_conform_usage_errors_exit_2_and_say_what_to_do(args: tuple[str, ...], says: str) -> None:
    done = rrkit(*args)
    assert done.returncode == 2 and says in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            "name: x\ndescription: d\nscript: fixture:text\nmusts:\n  - check: retries\n    why: w\n",
            "line 5, musts[0]: check 'retries' needs at_least or at_most",
        ),
        (
            "name: x\ndescription: d\nscript: fixture:text\nmusts:\n  - check: retry\n    why: w\n",
            "line 5, musts[0].check",
        ),
        (
            "name: x\ndescription: d\nscript: fixture:text\nmust:\n  - check: answered\n    why: w\n",
            "unknown key 'must' (did you mean 'musts'?)",
        ),
        (
            "name: x\ndescription: d\nscript: fixture:nope\nmusts:\n  - check: answered\n    why: w\n",
            "fixture:nope: no shipped script of that name",
        ),
        (
            "name: x\ndescription: d\nscript: {responses: [{fault: {drop_after: -1}}]}\n"
            "musts:\n  - {check: answered, why: w}\n",
            "script.responses[0].fault.drop_after",
        ),
    ],
)
def test_a_scenario_file_with_an_error_names_the_file_the_place_and_the_problem(
    tmp_path: Path, text: str, says: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConformError) as raised:
        load_scenario(path)
    assert str(path) in str(raised.value) and says in str(raised.value), str(raised.value)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("name: p\ndescription: d\nrules:\n  drop-mid-stram:\n    - {check: answered, why: w}\n", None),
        (
            "name: p\ndescription: d\nrules:\n  text:\n    - {check: flow, why: w}\n",
            "line 5, rules.text[0]: check 'flow' needs flow",
        ),
        ("name: p\ndescription: d\nrule: {}\n", "unknown key 'rule' (did you mean 'rules'?)"),
        ("name: p\ndescription: d\n", "a profile needs rules: `every` (for every scenario) or `rules`"),
        (
            "name: p\ndescription: d\nevery:\n  - {check: headers, headers: [authorization], why: w}\n",
            "line 4, every[0].headers: authorization: rrkit watches only these request headers: session-id",
        ),
    ],
)
def test_a_profile_file_with_an_error_names_the_file_the_place_and_the_problem(
    tmp_path: Path, scenarios: list[Scenario], text: str, says: str | None
) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConformError) as raised:
        run(scenarios=scenarios, only=("text",), transports=("http",), profile=str(path))
    message = str(raised.value)
    if says is None:  # a rule for a scenario that does not exist would judge nothing: refused by name
        assert "rules for 'drop-mid-stram', which is no scenario (did you mean 'drop-mid-stream'?)" in message
    else:
        assert str(path) in message and says in message, message


def test_an_unknown_profile_name_suggests_the_closest_shipped_one() -> None:
    done = rrkit("conform", "--profile", "codx")
    assert done.returncode == 2 and "no profile named 'codx' (did you mean 'codex'?)" in done.stderr


def test_a_scenario_file_that_is_not_utf8_is_named_with_the_byte_offset(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("name: caf\xe9\n".encode("latin-1"))
    with pytest.raises(ConformError, match=r"latin1.yaml: byte offset 9: not UTF-8"):
        load_scenario(path)


CALLS_OF_UNDECLARED_TOOLS = ("computer-use", "local-shell", "mcp-approval", "tool-search", "shell-and-patch")
"""The scenarios whose calls need a tool type the minimal client does not declare: not applicable to it."""


@pytest.mark.matrix  # an SDK client as a command through the whole catalogue, over both transports
def test_the_conform_guide_pytest_example_runs_one_test_per_scenario_over_xdist_workers(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, scenarios: list[Scenario]
) -> None:
    pytester.makepyfile(test_conformance=code_after("The same from pytest, one test per scenario and transport"))
    (pytester.path / "my_client.py").write_text(MINIMAL_CLIENT.read_text(encoding="utf-8"), encoding="utf-8")
    http = sum("http" in scenario.transports for scenario in scenarios)
    undeclared = len(CALLS_OF_UNDECLARED_TOOLS)  # the minimal client declares no tool and answers only functions
    outcome = pytester.runpytest_subprocess("-n", "2", "-p", "no:randomly")
    outcome.assert_outcomes(passed=http - undeclared, skipped=undeclared)
    monkeypatch.setenv("BROKEN", "retry-400")
    broken = pytester.runpytest_subprocess("test_conformance.py::test_the_client_keeps_every_must[http-400]")
    broken.assert_outcomes(failed=1)
    broken.stdout.fnmatch_lines(["*retries <= 0: saw 4 retries*a 400 says the request itself is wrong*"])


@pytest.fixture(scope="module")
def hostile_report(scenarios: list[Scenario]) -> ConformReport:
    """A failing report whose client's command line is markup (a command's text is the user's, untrusted)."""
    client = CommandClient([sys.executable, "-c", f"import sys; sys.exit(1)  # {HOSTILE}"])
    return run(client, scenarios=select(scenarios, ("text",)), transports=("http",))


TEXT_OVER_HTTP = '<span class="title">text</span> <span class="dim">rrkit.conform.http</span>'
"""The heading of the page's section for the `text` scenario over HTTP."""


def test_the_html_report_escapes_every_text_and_marks_each_broken_must(
    tmp_path: Path, hostile_report: ConformReport
) -> None:
    page = write_html(hostile_report, tmp_path / "conform.html").read_text(encoding="utf-8")
    assert HOSTILE not in page and "&lt;script&gt;" in page
    assert f'content="{CSP}"' in page  # no script may run, nothing may be fetched
    assert TEXT_OVER_HTTP in page and "FAILED" in page
    assert "a stream that ends with response.completed is a whole answer" in page  # the broken must's why


def test_conform_exits_2_naming_the_report_it_cannot_write(tmp_path: Path) -> None:
    page = tmp_path / "no-such-dir" / "conform.html"
    done = rrkit("conform", "--only", "text", "--transport", "http", "--html", str(page))
    assert done.returncode == 2 and str(page) in done.stderr and "cannot write the HTML report" in done.stderr


@needs_chromium
def test_the_html_report_renders_in_headless_chromium_and_runs_no_script(
    tmp_path: Path, hostile_report: ConformReport
) -> None:
    dom = dump_dom(write_html(hostile_report, tmp_path / "conform.html"))
    assert TEXT_OVER_HTTP in dom and "FAILED" in dom
    assert "pwned" not in dom


NODE_SDK = Path(__file__).resolve().parents[2] / ".ci" / "node-sdk" / "node_modules"


def node_sdk_client() -> CommandClient:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node not found: the openai npm SDK's client needs it")
    if not all((NODE_SDK / package / "package.json").exists() for package in ("openai", "ws")):
        pytest.skip(
            f"the openai and ws npm packages are not installed: npm install --prefix {NODE_SDK.parent} openai@6.49.0 "
            "ws@8.23.0"
        )
    return CommandClient([node, str(Path(__file__).with_name("sdk_client.cjs"))], env={"NODE_PATH": str(NODE_SDK)})


NPM_PERMANENT = ("context-length", "cyber-policy", "insufficient-quota", "invalid-prompt", "usage-not-included")
NPM_TRANSIENT = ("rate-limit", "server-overloaded", "slow-down", "unknown-code")
NPM_BROKEN = {
    "http": {
        ("ends-before-terminal", "answered"),
        ("ends-before-terminal", "outcome is failed"),  # the openai-sdk profile's rule, broken the same way
        ("incomplete", "answered"),
        ("stall", "ends on its own"),
        ("hosted-tools", "outcome is completed"),  # its accumulator throws on an event type it does not know
        *((f"failed-{name}", "outcome is failed") for name in NPM_PERMANENT),
        *((f"failed-{name}", "answered") for name in NPM_TRANSIENT),
    },
    "ws": {("stall", "ends on its own")},  # the client reads the socket's events itself: it sees each terminal event
}


@pytest.mark.matrix
@pytest.mark.parametrize("transport", ["http", "ws"])
def test_the_official_npm_sdk_breaks_only_the_musts_its_final_response_and_its_timeout_let_a_caller_break(
    scenarios: list[Scenario], transport: Transport
) -> None:
    """`responses.stream(...).finalResponse()` (openai 6.49.0) resolves with the last snapshot however the stream
    ended: a stream that ended cleanly without response.completed (status `in_progress`), a `response.failed`
    (status `failed`) and a `response.incomplete` come back as responses, and a client that does not check their
    `status` takes them as answers. Its request timeout ends when the response's headers arrive, and its WebSocket
    has no read timeout: a silent stream hangs the caller over both transports. docs/conformance.md explains each
    verdict."""
    client = node_sdk_client()
    report = run(client, scenarios=scenarios, transports=(transport,), profile="openai-sdk", timeout=SDK_TIMEOUT)
    assert {(v.scenario, v.expectation) for v in report.failures} == NPM_BROKEN[transport]
    seen = {result.run.scenario: result.run for result in report.results}
    if transport == "http":
        assert "OpenAIError: terminated" in seen["drop-mid-stream"].detail  # a cut body does raise
    else:
        assert [str(attempt) for attempt in seen["tool-loop"].attempts][1].endswith("ws incremental -> completed")


def test_the_conformance_page_has_a_row_for_every_scenario_and_transport_of_the_catalogue(
    scenarios: list[Scenario],
) -> None:
    """docs/conformance.md is written by docs/make_conformance.py; a scenario added since must be run there too."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "conformance.md").read_text(encoding="utf-8")
    assert "Generated by `.venv/bin/python docs/make_conformance.py`" in page
    for scenario in scenarios:
        for transport in scenario.transports:
            assert f"| {scenario.name} | {transport} |" in page, (scenario.name, transport)
    for failure in (
        "ends-before-terminal over http, answered",
        "failed-context-length over http, outcome is failed",
        "stall over ws, ends on its own",
    ):
        assert failure in page.split("## What the failures mean", 1)[1]


def test_the_conform_guide_callable_example_judges_an_sdk_client_in_process(tmp_path: Path) -> None:
    script = tmp_path / "conform_callable.py"
    script.write_text(code_after("returning `False`) that it failed:"), encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
