"""Seeded chaos for soak tests: random drops and stalls, in a script, on a whole server (`--chaos`, `chaos=`) and
from the pytest marker; the same seed cuts the same exchanges at the same events on every run."""

from __future__ import annotations

import textwrap

import httpx
import openai
import pytest
import yaml
from click.testing import CliRunner

from rrkit.cli import main
from rrkit.protocol import OutcomeKind
from rrkit.protocol.exceptions import SettingError
from rrkit.protocol.plan import Chaos, StreamFault
from rrkit.script import Script, parse_script, reply, text
from rrkit.server import FakeServer

from .faultclient import Serve, post_sse

LONG = reply(text("a b c d e f g h i j k l m n o p", chunks=16))  # 22 events
SOAK = Chaos(drop=0.08, seed=7)


def cuts(server: FakeServer, requests: int) -> list[tuple[str, int]]:
    """Each request's outcome as the server saw it: its kind and how many events went out."""
    for _ in range(requests):
        post_sse(server)
    return [(e.outcome.kind.value, e.outcome.events_sent) for e in server.settle().exchanges if e.outcome]


def test_the_same_seed_cuts_the_same_exchanges_at_the_same_events_on_two_runs(serve: Serve) -> None:
    first = cuts(serve(Script(default=LONG), chaos=SOAK), 24)
    second = cuts(serve(Script(default=LONG), chaos=SOAK), 24)
    other = cuts(serve(Script(default=LONG), chaos=Chaos(drop=0.08, seed=8)), 24)
    kinds = {kind for kind, _ in first}
    assert first == second
    assert kinds == {"dropped", "completed"}, first  # a soak: some cut, some whole
    assert other != first


def test_a_draw_is_the_stream_s_own_and_pure() -> None:
    draws = [SOAK.first_cut(key) for key in range(200)]
    assert draws == [Chaos(drop=0.08, seed=7).first_cut(key) for key in range(200)]
    assert all(kind == "drop" for kind, _ in filter(None, draws))
    mean = sum(index for _, index in filter(None, draws)) / 200
    assert 6 < mean < 20  # geometric with p = 0.08: mean 11.5
    assert Chaos().first_cut(1) is None and Chaos(stall=1.0).first_cut(1) == ("stall", 0)


def test_a_scripted_cut_wins_and_a_chaos_cut_past_the_end_does_not_happen() -> None:
    scripted = StreamFault(drop_after=3, chaos=Chaos(stall=1.0))
    assert scripted.resolved(0) is scripted
    late = StreamFault(chaos=Chaos(drop=1e-9, seed=1)).resolved(0)
    assert late.drop_after is not None and late.drop_after > 10_000 and not late.past_end


def test_a_chaos_stall_is_silence_until_the_client_gives_up(serve: Serve) -> None:
    server = serve(Script(default=LONG), chaos=Chaos(stall=1.0))
    result = post_sse(server, read_timeout=1.0)
    assert isinstance(result.error, httpx.ReadTimeout) and result.events == []
    assert server.settle().exchanges[0].outcome.kind is OutcomeKind.STALLED  # type: ignore[union-attr]


def test_a_script_s_chaos_applies_to_its_reply_only(serve: Serve) -> None:
    script = parse_script(
        yaml.safe_load(
            textwrap.dedent(
                """\
                name: chaos
                responses:
                  - output: [{text: "cut", chunks: 4}]
                    fault: {chaos: {drop: 1.0, seed: 3}}
                  - repeat: true
                    output: [{text: "whole", chunks: 4}]
                """
            )
        )
    )
    server = serve(script)
    assert cuts(server, 2) == [("dropped", 0), ("completed", 12)]


def test_the_sdk_sees_a_chaos_drop_as_a_connection_error(serve: Serve) -> None:
    server = serve(Script(default=LONG), chaos="drop=1,seed=2")
    client = openai.OpenAI(base_url=server.http_url, api_key="sk-test", max_retries=0)
    with pytest.raises(openai.APIConnectionError):
        list(client.responses.create(model="gpt-test", input="Hi", stream=True))


def test_a_bad_chaos_is_refused_saying_what_it_takes() -> None:
    with pytest.raises(SettingError, match=r"drop is a probability from 0 to 1"):
        FakeServer(chaos="drop=1.5")
    result = CliRunner().invoke(main, ["serve", "--chaos", "drp=0.1"])
    assert result.exit_code == 2 and "--chaos" in result.output
    assert "expected drop=P, stall=P, rate_limit=P, retry_after=S or seed=N" in result.output


def test_the_marker_s_chaos_reaches_the_test_s_server(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import openai, pytest

        @pytest.mark.rrkit(script="fixture:text", chaos="drop=1,seed=5")
        def test_cut(rrkit_server):
            client = openai.OpenAI(base_url=rrkit_server.http_url, api_key="sk-test", max_retries=0)
            with pytest.raises(openai.APIConnectionError):
                list(client.responses.create(model="gpt-test", input="Hi", stream=True))

        @pytest.mark.rrkit(chaos="drop=often")
        def test_bad(rrkit_server):
            pass
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*rrkit marker argument 'chaos': chaos drop='often'*"])
