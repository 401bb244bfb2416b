"""Seeded chaos `rate_limit`: a request refused with the service's 429 (`retry-after`, `retry-after-ms`, the OpenAI
error body) at a rate, the same requests on every run, before any reply is chosen (a scripted step answers the
retry); on a whole server (`chaos=`, `--chaos`, the pytest marker) and in a script's `fault: chaos:`, over HTTP and
WebSocket, and honoured by the official SDK's retries."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

import openai
import pytest
import yaml
from click.testing import CliRunner

from rrkit.cli import main
from rrkit.protocol import OutcomeKind
from rrkit.protocol.errors import error_body, named_delays, ws_error_frame
from rrkit.protocol.exceptions import ScriptError, SettingError
from rrkit.protocol.plan import Chaos
from rrkit.script import Script, parse_script, reject, reply, text
from rrkit.server import FakeServer

from .faultclient import Serve, finished, post_sse, sdk, text_of, ws_connect, ws_request

SHORT = reply(text("hi"))
RATE_LIMITED = "rate_limit_exceeded"


def seed_where(pattern: Sequence[bool], rate_limit: float = 0.5, retry_after: float = 1.0) -> Chaos:
    """A chaos at `rate_limit` whose draws for exchanges 0, 1, ... refuse exactly as `pattern` says (searched)."""
    for seed in range(10_000):
        chaos = Chaos(seed=seed, rate_limit=rate_limit, retry_after=retry_after)
        if [chaos.rate_limited(key) for key in range(len(pattern))] == list(pattern):
            return chaos
    raise AssertionError(f"no seed draws {pattern}")


def refused_ids(server: FakeServer, requests: int) -> list[int]:
    """Send `requests` requests; the ids of the exchanges the server refused with 429."""
    for _ in range(requests):
        post_sse(server)
    exchanges = server.settle().exchanges
    assert len(exchanges) == requests
    return [e.id for e in exchanges if e.outcome is not None and e.outcome.status == 429]


def expected_body(seconds: str) -> dict[str, Any]:
    message = f"Rate limit reached for requests. Please try again in {seconds}s."
    return error_body(message, type="requests", code=RATE_LIMITED)


# -- the draw: seeded, reproducible, its own -------------------------------------------------------


def test_the_same_seed_refuses_the_same_requests_on_two_runs(serve: Serve) -> None:
    chaos = Chaos(seed=7, rate_limit=0.3)
    first = refused_ids(serve(Script(default=SHORT), chaos=chaos), 24)
    second = refused_ids(serve(Script(default=SHORT), chaos=chaos), 24)
    other = refused_ids(serve(Script(default=SHORT), chaos=Chaos(seed=8, rate_limit=0.3)), 24)
    assert first == second == [key for key in range(24) if chaos.rate_limited(key)]
    assert 0 < len(first) < 24, first  # some refused, some answered
    assert other != first


@pytest.mark.parametrize(("rate", "refused"), [(0.0, []), (1.0, list(range(6)))])
def test_rate_0_refuses_none_and_rate_1_refuses_every_request(serve: Serve, rate: float, refused: list[int]) -> None:
    server = serve(Script(default=SHORT), chaos=Chaos(seed=3, rate_limit=rate))
    assert refused_ids(server, 6) == refused


def test_the_rate_limit_draw_leaves_the_cut_draw_as_it_was() -> None:
    """The refusal and the cut are drawn from generators of their own: adding a rate limit moves no cut."""
    cuts = Chaos(drop=0.1, seed=7)
    both = Chaos(drop=0.1, seed=7, rate_limit=0.5)
    assert [both.first_cut(key) for key in range(100)] == [cuts.first_cut(key) for key in range(100)]
    refused = [both.rate_limited(key) for key in range(400)]
    assert 150 < sum(refused) < 250  # about half
    assert Chaos(0.1, 0.0, 7) == cuts  # the positional (drop, stall, seed) still works


# -- the refusal, over each transport ---------------------------------------------------------------


def test_a_refused_request_answers_429_with_retry_after_both_ways_and_the_openai_error_body(serve: Serve) -> None:
    server = serve(Script(default=SHORT), chaos="rate_limit=1,retry_after=0.5")
    result = post_sse(server)
    assert result.status == 429 and result.events == []
    assert (result.headers["retry-after"], result.headers["retry-after-ms"]) == ("0.5", "500")
    assert result.headers["content-type"] == "application/json"
    assert result.json == expected_body("0.5")
    # the headers and the message name one delay, whichever a client reads
    assert named_delays(result.headers, result.json["error"]["message"]) == (0.5,)
    recorded = finished(server)
    assert recorded.outcome is not None
    assert (recorded.outcome.kind, recorded.outcome.status, recorded.outcome.code) == (
        OutcomeKind.REFUSED,
        429,
        RATE_LIMITED,
    )


def test_over_websocket_the_refusal_is_the_error_frame_any_refusal_is_and_the_socket_stays_open(
    serve: Serve,
) -> None:
    chaos = seed_where([True, False], retry_after=1.5)
    server = serve(Script(default=SHORT), chaos=chaos)
    with ws_connect(server) as websocket:
        refused = ws_request(websocket)
        answered = ws_request(websocket)
    headers = {"retry-after": "1.5", "retry-after-ms": "1500"}
    message = "Rate limit reached for requests. Please try again in 1.5s."
    assert refused.events == [ws_error_frame(429, message, type="requests", code=RATE_LIMITED, headers=headers)]
    assert answered.types[-1] == "response.completed" and text_of(answered.events) == "hi"
    # the same frame a scripted refusal of the same fields goes out as
    scripted = serve(Script(default=reject(429, RATE_LIMITED, message, type="requests", headers=headers)))
    with ws_connect(scripted) as websocket:
        assert ws_request(websocket).events == refused.events
    statuses = [e.outcome.status if e.outcome else None for e in server.settle().exchanges]
    assert statuses == [429, None]


# -- before the reply is chosen: no scripted step is used by a refusal ------------------------------


def test_a_refused_request_uses_no_scripted_step_the_steps_answer_the_retries_in_order(serve: Serve) -> None:
    chaos = seed_where([True, False, True, True, False], rate_limit=0.5)
    server = serve(Script().queue(reply(text("one")), reply(text("two"))), chaos=chaos)
    answers = [post_sse(server) for _ in range(5)]
    assert [answer.status for answer in answers] == [429, 200, 429, 429, 200]
    assert [text_of(answer.events) for answer in answers if answer.status == 200] == ["one", "two"]
    assert server.state.source.unused() == []  # each step used once, by the requests that were answered


def test_a_script_step_s_own_chaos_rate_limit_refuses_before_the_step_is_used(serve: Serve) -> None:
    step_chaos = seed_where([True, False], rate_limit=0.5, retry_after=0.25)
    script = parse_script(
        yaml.safe_load(
            textwrap.dedent(
                f"""\
                name: step-chaos
                responses:
                  - output: [{{text: "one"}}]
                    fault: {{chaos: {{rate_limit: 0.5, retry_after: 0.25, seed: {step_chaos.seed}}}}}
                  - output: [{{text: "two"}}]
                """
            )
        )
    )
    server = serve(script)
    answers = [post_sse(server) for _ in range(3)]
    assert [answer.status for answer in answers] == [429, 200, 200]
    assert answers[0].json == expected_body("0.25")
    assert (answers[0].headers["retry-after"], answers[0].headers["retry-after-ms"]) == ("0.25", "250")
    assert [text_of(answer.events) for answer in answers[1:]] == ["one", "two"]


def test_a_default_reply_s_chaos_rate_limit_refuses_too(serve: Serve) -> None:
    script = parse_script({"default": {"output": [{"text": "hi"}], "fault": {"chaos": {"rate_limit": 1}}}})
    server = serve(script)
    result = post_sse(server)
    assert result.status == 429 and result.json == expected_body("1")


# -- settings: the parts and the JSON, each error naming its field ----------------------------------


def test_parse_reads_every_part_and_the_json_round_trips() -> None:
    chaos = Chaos.parse("drop=0.02, stall=0.01, rate_limit=0.05, retry_after=1.5, seed=7")
    assert chaos == Chaos(0.02, 0.01, 7, rate_limit=0.05, retry_after=1.5)
    assert chaos.to_json() == {"drop": 0.02, "stall": 0.01, "rate_limit": 0.05, "seed": 7, "retry_after": 1.5}
    assert Chaos.from_json(chaos.to_json()) == chaos
    assert Chaos.from_json({"rate_limit": 1}) == Chaos(rate_limit=1.0)
    assert Chaos.from_json({}) == Chaos()


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("rate_limit=1.5", "rate_limit is a probability from 0 to 1"),
        ("rate_limit=often", "rate_limit='often': rate_limit is a probability"),
        ("rate_limit=nan", "rate_limit is a probability from 0 to 1"),
        ("retry_after=0", "retry_after is seconds from 0.001 to 3600"),
        ("retry_after=inf", "retry_after is seconds from 0.001 to 3600"),
        ("retry_after=soon", "retry_after='soon': retry_after is seconds"),
        ("retry=1", "expected drop=P, stall=P, rate_limit=P, retry_after=S or seed=N"),
    ],
)
def test_a_bad_part_is_refused_naming_it(text: str, names: str) -> None:
    with pytest.raises(SettingError, match=names.replace("(", r"\(")):
        Chaos.parse(text)


@pytest.mark.parametrize(
    ("obj", "names"),
    [
        ({"rate_lmit": 0.1}, "unknown chaos field 'rate_lmit' (did you mean 'rate_limit'?)"),
        ({"drop": True}, "chaos field 'drop' must be a probability from 0 to 1, got True"),
        ({"seed": 1.5}, "chaos field 'seed' must be an integer"),
        ({"seed": False}, "chaos field 'seed' must be an integer"),
        ({"retry_after": "1"}, "chaos field 'retry_after' must be seconds from 0.001 to 3600"),
        ({"rate_limit": float("nan")}, "chaos field 'rate_limit' must be a probability"),
        ({"retry_after": float("inf")}, "chaos field 'retry_after' must be seconds"),
        ({"stall": 10**400}, "chaos field 'stall' must be a probability"),
        ({"rate_limit": 2}, "chaos rate_limit is a probability from 0 to 1, got 2.0"),
        ({"retry_after": 7200}, "chaos retry_after is seconds from 0.001 to 3600, got 7200.0"),
        ({"drop": 0.6, "stall": 0.6}, "chaos drop + stall is a probability"),
        ([0.1], "chaos must be a JSON object with the fields drop, stall, rate_limit, seed, retry_after"),
    ],
)
def test_from_json_refuses_a_bad_field_naming_it(obj: object, names: str) -> None:
    with pytest.raises(SettingError) as refused:
        Chaos.from_json(obj)
    assert names in str(refused.value)


def test_serve_refuses_a_bad_rate_limit_naming_the_option_and_the_part() -> None:
    result = CliRunner().invoke(main, ["serve", "--chaos", "rate_limit=2"])
    assert result.exit_code == 2 and "--chaos" in result.output
    assert "rate_limit is a probability from 0 to 1" in result.output


def test_a_script_s_chaos_refuses_a_bad_retry_after_naming_it() -> None:
    with pytest.raises(ScriptError, match=r"default\.fault\.chaos\.retry_after: .* 0\.001"):
        parse_script({"default": {"fault": {"chaos": {"rate_limit": 0.1, "retry_after": 0}}}})


# -- clients: the official SDK, the pytest marker ---------------------------------------------------


def test_the_sdk_waits_the_named_delay_then_its_retry_is_answered(serve: Serve) -> None:
    server = serve(Script(default=SHORT), chaos=seed_where([True, False], retry_after=0.5))
    response = sdk(server).with_options(max_retries=2).responses.create(model="gpt-test", input="Hi")
    assert response.output_text == "hi"
    refused, answered = server.settle().exchanges
    assert refused.outcome is not None and refused.outcome.status == 429 and refused.ended_at is not None
    assert answered.outcome is not None and answered.outcome.kind is OutcomeKind.COMPLETED
    assert answered.started_at - refused.ended_at >= 0.5 - 0.05  # a lower bound: the SDK waited retry-after-ms


def test_the_sdk_without_retries_raises_rate_limit_error_with_the_retry_after(serve: Serve) -> None:
    server = serve(Script(default=SHORT), chaos=Chaos(rate_limit=1.0, retry_after=2))
    with pytest.raises(openai.RateLimitError) as raised:
        sdk(server).responses.create(model="gpt-test", input="Hi")
    assert raised.value.status_code == 429 and raised.value.code == RATE_LIMITED
    assert raised.value.type == "requests"
    assert raised.value.response.headers["retry-after"] == "2"
    assert raised.value.response.headers["retry-after-ms"] == "2000"


def test_the_marker_s_chaos_rate_limit_reaches_the_test_s_server(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import openai, pytest

        @pytest.mark.rrkit(chaos="rate_limit=1,retry_after=0.1,seed=5")
        def test_refused(rrkit_server):
            client = openai.OpenAI(base_url=rrkit_server.http_url, api_key="sk-test", max_retries=0)
            with pytest.raises(openai.RateLimitError) as raised:
                client.responses.create(model="gpt-test", input="Hi")
            assert raised.value.response.headers["retry-after-ms"] == "100"

        @pytest.mark.rrkit(chaos="rate_limit=often")
        def test_bad(rrkit_server):
            pass
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*rrkit marker argument 'chaos': chaos rate_limit='often'*"])
