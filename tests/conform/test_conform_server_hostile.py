"""A referee a hostile server cannot knock over nor fool: one answer too large to read is that probe's finding,
every other probe still runs, and the report and its JUnit file are written; a server that never answers costs
the run its budget, the probes left reported not run; a correct stream sent gzip-encoded
is read as the official SDK reads it, with no finding, and one that is not UTF-8 text is a finding, as the SDK
refuses it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import tracemalloc
from pathlib import Path
from xml.etree import ElementTree

import pytest
from click.testing import CliRunner
from websockets.utils import accept_key

from rrkit.cli import main
from rrkit.conform.server import Target, probe_catalogue, run_server
from rrkit.conform.server.sdk import known_event_types
from rrkit.drive.remote import MAX_BODY, MAX_EVENTS

from ..errortrap import Serve
from ..hostile import taking_at_most
from .broken_servers import ResponsesServer
from .test_conform_server_broken import CREATE_PROBES, ONLY, TIMEOUT


@pytest.fixture
def huge(serve: Serve) -> ResponsesServer:
    """The small correct server, but its first stream over SSE opens with a 100 MB event."""
    return serve.guard(ResponsesServer(huge_first_event=True).start_in_thread())


def test_a_100_mb_event_is_one_probe_s_finding_and_every_other_probe_runs(
    huge: ResponsesServer, tmp_path: Path
) -> None:
    server, junit = huge, tmp_path / "server.xml"
    args = ["conform", "--server", server.url, "--transport", "http", "--timeout", str(TIMEOUT), "--json"]
    with taking_at_most(30.0, "the run against a 100 MB event"):  # idle: 1.4 s
        result = CliRunner().invoke(main, [*args, "--junit", str(junit), *ONLY])
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    failed = [case for case in report["cases"] if not case["ok"]]
    assert len(failed) == 1, [case["name"] for case in failed]
    musts = [f for f in failed[0]["findings"] if f["severity"] == "must"]
    assert any(f"went past {MAX_BODY} bytes" in finding["evidence"] for finding in musts), musts
    http_probes = {case["name"] for case in report["cases"]}
    assert http_probes and http_probes <= set(CREATE_PROBES) and len(report["cases"]) > 1
    suite = ElementTree.parse(junit).getroot()
    assert suite.get("tests") == str(len(report["cases"])) and suite.get("failures") == "1"


def test_reading_a_100_mb_event_costs_the_referee_a_bounded_amount_of_memory(huge: ResponsesServer) -> None:
    server = huge
    first = CREATE_PROBES[:1]
    tracemalloc.start()
    try:
        report = run_server(Target(server.url, timeout=TIMEOUT), transports=("http",), only=first)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not report.ok
    assert peak < 6 * MAX_BODY, f"the referee peaked at {peak} bytes reading a {100 << 20}-byte event"


def test_a_correct_stream_sent_gzip_encoded_gets_no_finding(serve: Serve) -> None:
    server = serve.guard(ResponsesServer(gzip=True).start_in_thread())
    report = run_server(Target(server.url, timeout=TIMEOUT), transports=("http",), only=CREATE_PROBES)
    assert report.ok and [str(finding) for finding in report.findings if finding.severity == "must"] == []
    streamed = [answer for result in report.results for answer in result.answers if answer.streamed]
    assert streamed and all(answer.headers.get("content-encoding") == "gzip" for answer in streamed)


def test_a_stream_that_is_not_utf8_text_is_a_must_finding_over_http(serve: Serve) -> None:
    server = serve.guard(ResponsesServer(latin1=True).start_in_thread())
    report = run_server(Target(server.url, timeout=TIMEOUT), transports=("http",), only=CREATE_PROBES)
    musts = [finding for finding in report.findings if finding.severity == "must"]
    assert not report.ok and musts
    assert {finding.reason for finding in musts} == {"a stream is UTF-8 text (the official SDKs refuse any other)"}
    assert all(finding.evidence.startswith("byte ") for finding in musts)


class SilentServer:
    """Accepts every connection, reads what comes, and never answers."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.writers: list[asyncio.StreamWriter] = []

    async def answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await reader.read(65536):
            pass

    async def _serve(self) -> asyncio.Server:
        async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.writers.append(writer)
            with contextlib.suppress(OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                await self.answer(reader, writer)

        return await asyncio.start_server(hold, "127.0.0.1", 0)

    def __enter__(self) -> str:
        self.thread.start()
        self.server = asyncio.run_coroutine_threadsafe(self._serve(), self.loop).result(10)
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1"

    def __exit__(self, *_: object) -> None:
        async def stop() -> None:
            self.server.close()
            for writer in self.writers:
                writer.transport.abort()

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def test_a_silent_server_costs_the_run_its_budget_and_the_probes_left_are_reported_not_run(tmp_path: Path) -> None:
    junit = tmp_path / "server.xml"
    with SilentServer() as url, taking_at_most(20.0, "a run of a 1 s budget"):  # idle: 1.8 s
        args = ["conform", "--server", url, "--transport", "http", "--timeout", "0.2", "--budget", "1", "--json"]
        result = CliRunner().invoke(main, [*args, "--junit", str(junit), *ONLY])
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    over_http = {
        probe.name for probe in probe_catalogue() if probe.name in CREATE_PROBES and "http" in probe.transports
    }
    assert {case["name"] for case in report["cases"]} == over_http
    not_run = [
        case["name"]
        for case in report["cases"]
        if any("the run's budget of 1 s was spent" in finding["evidence"] for finding in case["findings"])
    ]
    assert not_run and not any(case["ok"] for case in report["cases"])
    assert "the whole run 1 s" in result.stderr
    assert ElementTree.parse(junit).getroot().get("tests") == str(len(report["cases"]))


FLOOD_BYTES = 64 << 20
"""What a flooding server sends one connection at most (four times what the referee reads of one answer)."""


class FloodServer(SilentServer):
    """Reads a request's head, then never reads again: a WebSocket upgrade gets its 101 and pings without end
    (each one asks the referee for a pong nobody reads); an HTTP request gets a stream of SSE comments (`: p`, the
    cheapest event there is, each one kept by a careless referee)."""

    async def answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        key = next(
            (
                line.split(b":", 1)[1].strip()
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"sec-websocket-key:")
            ),
            None,
        )
        if key is not None:
            writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n")
            writer.write(b"Sec-WebSocket-Accept: " + accept_key(key.decode()).encode() + b"\r\n\r\n")
            burst = (b"\x89\x7d" + b"p" * 125) * 512  # unmasked ping frames, 125 bytes each
        else:
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
            comments = b": p\n\n" * 12_000
            burst = b"%x\r\n" % len(comments) + comments + b"\r\n"
        for _ in range(FLOOD_BYTES // len(burst)):
            writer.write(burst)
            await writer.drain()


@pytest.mark.load
@pytest.mark.parametrize(
    ("transport", "probe", "timeout", "ending"),
    [
        ("ws", "codex-request", 1.0, "no terminal event or error frame"),  # pings are no events: silence, to time
        ("http", "sse-text", TIMEOUT, f"past {MAX_EVENTS} events"),
    ],
)
def test_a_flooding_server_that_never_reads_costs_the_referee_bounded_memory(
    transport: str, probe: str, timeout: float, ending: str
) -> None:
    known_event_types()  # the official SDK's types, loaded once per process: not the flood's cost
    with FloodServer() as url, taking_at_most(150.0, f"the probe under a {transport} flood"):  # idle: 9-12 s
        tracemalloc.start()
        try:
            report = run_server(Target(url, timeout=timeout), transports=(transport,), only=[probe])
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    evidence = [finding.evidence for finding in report.findings if finding.severity == "must"]
    assert not report.ok and any(ending in text for text in evidence), evidence
    # Pings unanswered cost what websockets queues before reading stops (32 KiB); comments, MAX_EVENTS kept ones
    # (about 450 bytes each) at most: before the bounds, 300 MB and 1.1 GB.
    bound = 16 << 20 if transport == "ws" else MAX_EVENTS * 600
    assert peak < bound, f"the referee peaked at {peak} bytes under a {transport} flood"
