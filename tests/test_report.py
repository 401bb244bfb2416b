"""The report every judge writes (rrkit.report), held to its contracts through the real commands on real files:
each judging command (`validate`, `diff`, `replay`, `conform`, `conform --server`), passing and failing, prints
`--json` valid under the shipped schema (`rrkit schema report`) and read back as written, and writes `--junit` as
one test suite with a test case per case and a failure per failed case, and `--github` an `::error` per must; what
a judged peer sent (markup, control characters, a lone surrogate) comes out escaped in every format, and the
`--html` page renders its cases in headless Chromium without running anything."""

from __future__ import annotations

import functools
import io
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import jsonschema
import pytest
from click.testing import CliRunner
from rich.console import Console

from rrkit.cassette import RecordedEvent, load_cassette, save_cassette
from rrkit.cli import main
from rrkit.files.atomic import write_page
from rrkit.report import Case, Finding, Held, Place, Report, Severity
from rrkit.report.github import to_annotations
from rrkit.report.html import to_html
from rrkit.report.json_text import to_json
from rrkit.report.junit import to_junit
from rrkit.report.terminal import render
from rrkit.schema import json_schema
from rrkit.script import load_script
from rrkit.server.runner import FakeServer

from .chromium import HOSTILE, dump_dom, needs_chromium

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "cassettes"
FAILS = [sys.executable, "-c", "import sys; sys.exit(1)"]
"""A client that fails every turn without a request."""
GATEWAY = """\
name: a-gateway-that-ends-streams-early
responses:
  - output: [{text: "This stream ends too soon.", chunks: 5}]
    fault: {drop_after: 5, close: end}
    repeat: true
"""
"""A server that ends every stream as if whole before its terminal event (docs/tutorials/judge-a-server.md)."""
PROBES = ("--only", "sse-text", "--only", "invalid-json")
ODD_NAME = "100%,odd:name.json"
"""A file name with what separates the properties of a workflow command (`,` and `:`) and what escapes them."""


@dataclass(frozen=True)
class Run:
    """A judging command: its arguments (options first, then `--` and a client command if any), and whether the
    judged thing holds."""

    args: tuple[str, ...]
    ok: bool
    client: tuple[str, ...] = ()


@dataclass(frozen=True)
class Judged:
    exit_code: int
    stdout: str
    report: dict[str, Any]
    suite: ElementTree.Element
    annotations: list[str]
    page: Path


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """What the runs name that a test makes: a broken cassette (with an odd file name), and two servers to judge,
    one correct and one that ends its streams early."""
    where = tmp_path_factory.mktemp("judged")
    cassette = load_cassette(GOLDEN / "text.http.json")
    exchange = cassette.exchanges[0]
    events = [recorded.event for recorded in exchange.events]
    delta = next(i for i, event in enumerate(events) if event["type"] == "response.output_text.delta")
    added = next(i for i, event in enumerate(events) if event["type"] == "response.output_item.added")
    events.insert(added, events.pop(delta))  # a delta before its item is added
    exchange.events = [RecordedEvent.of(0.0, {**event, "sequence_number": n}) for n, event in enumerate(events)]
    save_cassette(cassette, where / ODD_NAME)
    (where / "gateway.yaml").write_text(GATEWAY, encoding="utf-8")
    with FakeServer() as correct, FakeServer(load_script(where / "gateway.yaml")) as gateway:
        yield {"broken": str(where / ODD_NAME), "correct": correct.http_url, "gateway": gateway.http_url}


RUNS: dict[str, Run] = {
    "validate-clean": Run(("validate", str(GOLDEN / "text.http.json"), str(GOLDEN / "tool-loop.ws.json")), ok=True),
    "validate-broken": Run(("validate", str(GOLDEN / "text.ws.json"), "{broken}"), ok=False),
    "diff-equal": Run(("diff", str(GOLDEN / "text.http.json"), str(GOLDEN / "text.http.json")), ok=True),
    "diff-different": Run(("diff", str(GOLDEN / "text.http.json"), str(GOLDEN / "text.ws.json")), ok=False),
    "replay-reference": Run(("replay", str(GOLDEN / "text.http.json")), ok=True),
    "replay-failing": Run(("replay", str(GOLDEN / "text.http.json")), ok=False, client=tuple(FAILS)),
    "conform-reference": Run(("conform", "--only", "text", "--transport", "http"), ok=True),
    "conform-failing": Run(("conform", "--only", "text", "--transport", "http"), ok=False, client=tuple(FAILS)),
    "server-correct": Run(("conform", "--server", "{correct}", *PROBES), ok=True),
    "server-gateway": Run(("conform", "--server", "{gateway}", *PROBES), ok=False),
}


def invoke(args: list[str], where: Path) -> Judged:
    """`rrkit ARGS` with every report option, before any `--`: JSON on stdout, annotations on stderr."""
    junit, page = where / "report.xml", where / "report.html"
    at = args.index("--") if "--" in args else len(args)
    outputs = ["--json", "--junit", str(junit), "--html", str(page), "--github"]
    result = CliRunner().invoke(main, [*args[:at], *outputs, *args[at:]])
    assert result.exit_code in (0, 1), result.output + result.stderr
    return Judged(
        result.exit_code,
        result.stdout,
        json.loads(result.stdout),
        ElementTree.parse(junit).getroot(),
        result.stderr.splitlines(),
        page,
    )


@pytest.fixture(scope="module")
def judged(places: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Judged]:
    """Each run of RUNS once per module, as the command writes it."""

    @functools.cache
    def run(name: str) -> Judged:
        given = RUNS[name]
        args = [arg.format(**places) for arg in given.args]
        return invoke([*args, *(["--", *given.client] if given.client else [])], tmp_path_factory.mktemp(name))

    return run


@functools.cache
def validator() -> jsonschema.Draft202012Validator:
    schema = json_schema("report")
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("name", RUNS)
def test_the_json_report_is_valid_under_the_shipped_schema_and_says_what_the_exit_status_says(
    judged: Callable[[str], Judged], name: str
) -> None:
    got = judged(name)
    errors = [f"{error.json_path}: {error.message[:200]}" for error in validator().iter_errors(got.report)]
    assert not errors, errors
    report, tool = got.report, RUNS[name].args[0] + (" --server" if "--server" in RUNS[name].args else "")
    assert (report["rrkit_report"], report["tool"], report["ok"]) == (1, tool, RUNS[name].ok)
    assert got.exit_code == (0 if report["ok"] else 1) and report["cases"]
    counts = report["counts"]
    assert counts["cases"] == len(report["cases"]) and counts["failed"] == sum(not c["ok"] for c in report["cases"])
    assert counts["must"] == sum(f["severity"] == "must" for c in report["cases"] for f in c["findings"])
    assert (counts["must"] > 0) is (not report["ok"])


@pytest.mark.parametrize("name", RUNS)
def test_the_json_report_reads_back_as_the_report_written(judged: Callable[[str], Judged], name: str) -> None:
    written = judged(name).stdout
    assert to_json(Report.model_validate_json(written)) + "\n" == written


@pytest.mark.parametrize("name", RUNS)
def test_the_junit_report_is_one_suite_with_a_test_case_per_case_and_a_failure_per_failed_case(
    judged: Callable[[str], Judged], name: str
) -> None:
    got = judged(name)
    suite, cases = got.suite, got.report["cases"]
    assert suite.tag == "testsuite"
    testcases = suite.findall("testcase")
    assert int(suite.get("tests") or -1) == len(testcases) == len(cases)
    failed = [case for case in testcases if case.find("failure") is not None]
    assert int(suite.get("failures") or -1) == len(failed) == got.report["counts"]["failed"]
    assert [(case.get("classname"), case.get("name")) for case in testcases] == [(c["group"], c["name"]) for c in cases]
    assert sum(len(case.findall("failure")) for case in testcases) == got.report["counts"]["must"]


@pytest.mark.parametrize("name", RUNS)
def test_github_annotations_are_an_error_per_must_finding(judged: Callable[[str], Judged], name: str) -> None:
    got = judged(name)
    errors = [line for line in got.annotations if line.startswith("::error ")]
    assert len(errors) == got.report["counts"]["must"]
    assert bool(errors) is (not RUNS[name].ok)
    for line in errors:
        properties, message = line.removeprefix("::error ").split("::", 1)
        assert properties.startswith(("file=", "title=rrkit ")) and message.startswith("[must] ")


def test_github_annotations_escape_what_separates_properties_and_point_at_the_file(
    judged: Callable[[str], Judged],
) -> None:
    (line,) = [line for line in judged("validate-broken").annotations if line.startswith("::error ")]
    properties, message = line.removeprefix("::error ").split("::", 1)
    file, title = properties.split(",")  # the file name's own `,` escaped
    assert file.startswith("file=") and file.endswith("/100%25%2Codd%3Aname.json")
    assert title == f"title=rrkit validate%3A {file.removeprefix('file=')}%3A item_added_first"
    assert message.startswith("[must] exchange 0 event 2: an output item is added before events that refer to it;")


def test_the_judges_name_their_cases_and_keep_their_own_detail(
    judged: Callable[[str], Judged], places: dict[str, str]
) -> None:
    """What each judge puts in a case and in `detail` (its shape is the judge's, documented with it)."""
    validate = judged("validate-broken").report
    assert [case["name"] for case in validate["cases"]] == [str(GOLDEN / "text.ws.json"), places["broken"]]
    assert [case["file"] for case in validate["cases"]] == [case["name"] for case in validate["cases"]]
    assert validate["cases"][1]["findings"][0]["place"]["exchange"] == 0
    assert [one["path"] for one in validate["detail"]["cassettes"]] == [str(GOLDEN / "text.ws.json"), places["broken"]]
    assert set(judged("diff-different").report["detail"]) >= {"rrkit_diff", "differences", "pairs"}
    (replayed,) = judged("replay-failing").report["detail"]["replays"]
    assert replayed["ok"] is False and replayed["client"]["ok"] is False
    conform = judged("conform-failing").report
    assert [(case["group"], case["name"]) for case in conform["cases"]] == [("rrkit.conform.http", "text")]
    assert conform["cases"][0]["findings"][0]["place"]["label"] == "text [http]"
    server = judged("server-gateway").report
    assert {case["name"] for case in server["cases"]} == {"sse-text", "invalid-json"}
    (broken,) = [case for case in server["cases"] if not case["ok"]]
    assert broken["name"] == "sse-text" and broken["group"] == "rrkit.conform.server.http"
    assert all(f["place"]["label"].startswith("sse-text [http] step 1") for f in broken["findings"])


# -- what a judged peer sent ----------------------------------------------------------------------------------------

NASTY = f"{HOSTILE}\x1b[31m\x00 100%, a:b\nnext line \u202e \ud800"
"""Markup, a terminal escape, a NUL, the workflow commands' separators, a newline, a bidi override and a lone
surrogate (JSON a peer sends can hold one): a peer's text a report must show as text."""


def nasty_report() -> Report:
    place = Place(label=f"probe {NASTY}", exchange=1, event=2, event_type=NASTY, field=NASTY)
    finding = Finding(rule=NASTY, place=place, reason=f"requires {NASTY}", evidence=f"saw {NASTY}")
    should = Finding(rule="r", severity=Severity.SHOULD, reason="why", evidence=NASTY)
    case = Case(group=f"rrkit.{NASTY}", name=NASTY, findings=(finding, should), held=(Held(rule=NASTY),), output=NASTY)
    return Report(tool="conform", subject=NASTY, summary=NASTY, properties={NASTY: NASTY}, cases=(case,))


def test_a_hostile_text_in_a_finding_is_escaped_in_html_valid_xml_in_junit_and_valid_json(tmp_path: Path) -> None:
    report = nasty_report()
    written = to_json(report)
    assert json.loads(written)["cases"][0]["findings"][0]["evidence"] == f"saw {NASTY}"  # kept, as JSON escapes
    assert written.isascii()

    suite = ElementTree.fromstring(to_junit(report).encode("utf-8"))  # XML 1.0 holds no NUL, ESC or surrogate
    (failure,) = suite.iter("failure")
    assert "<script>" in (failure.text or "") and "\\x1b" in (failure.text or "") and "\\ud800" in (failure.text or "")

    page = write_page(to_html(report), tmp_path / "report.html").read_text(encoding="utf-8")
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert not {"\x1b", "\x00", "\u202e", "\ud800"} & set(page) and "\\x1b" in page and "\\ud800" in page

    annotations = to_annotations(report)
    assert (
        annotations.encode("utf-8") and len(annotations.splitlines()) == 2
    )  # one line per finding, the newline escaped
    error, warning = annotations.splitlines()
    assert error.startswith("::error title=rrkit conform%3A ") and warning.startswith("::warning ")
    assert "%0Anext line" in error and "100%25, a:b" in error and "100%25%2C a%3Ab" in error.split("::")[1]
    assert not {"\x1b", "\x00", "\ud800"} & set(annotations)

    shown = io.StringIO()
    render(report, Console(file=shown, width=100, color_system=None))
    assert not {"\x1b", "\x00", "\u202e", "\ud800"} & set(shown.getvalue()) and "<script>" in shown.getvalue()


def test_a_hostile_client_command_and_output_come_out_escaped_from_the_command(tmp_path: Path) -> None:
    """The client's command line (with a lone surrogate: a byte that is no UTF-8) and what it printed are the
    user's and the client's, untrusted: `rrkit conform` writes them in every format without choking."""
    client = [sys.executable, "-c", f"import sys; print({HOSTILE!r} + '\\x1b[31m', file=sys.stderr); sys.exit(1)"]
    got = invoke(["conform", "--only", "text", "--transport", "http", "--", *client, "\udcff"], tmp_path)
    assert got.exit_code == 1 and got.stdout.isascii()
    assert got.report["subject"].endswith("\udcff") and HOSTILE in got.report["cases"][0]["findings"][0]["evidence"]
    assert got.suite.find("properties/property[@name='client']").get("value", "").endswith("\\udcff")  # type: ignore[union-attr]
    page = got.page.read_text(encoding="utf-8")
    assert HOSTILE not in page and "\x1b" not in page and "\\udcff" in page
    assert not {"\x1b", "\udcff"} & set("\n".join(got.annotations))


@needs_chromium
def test_the_conform_html_page_renders_its_cases_in_headless_chromium_and_runs_no_script(tmp_path: Path) -> None:
    client = [sys.executable, "-c", "import sys; sys.exit(1)  # " + HOSTILE]
    got = invoke(["conform", "--only", "text", "--only", "http-500", "--transport", "http", "--", *client], tmp_path)
    dom = dump_dom(got.page)
    for case in got.report["cases"]:
        assert f'<span class="title">{case["name"]}</span> <span class="dim">{case["group"]}</span>' in dom
    assert dom.count(">FAILED<") == got.report["counts"]["failed"] > 0
    assert "pwned" not in dom
