"""`GET /__rrkit/metrics`: what a long-running fake server did and keeps, in the Prometheus text format (read off
its state at each scrape; the only running cost is one counter per ended exchange)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from .respond import ServerState
    from .state import Sessions

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class _ServerCollector(Collector):
    def __init__(self, state: ServerState) -> None:
        self.state = state

    def collect(self) -> Iterator[Metric]:
        state, counts = self.state, self.state.counts
        exchanges = CounterMetricFamily(
            "rrkit_exchanges", "Exchanges ended, by transport and outcome", labels=["transport", "outcome"]
        )
        for (transport, outcome), count in sorted(counts.outcomes.items()):
            exchanges.add_metric([transport, outcome], count)
        yield exchanges
        refused = CounterMetricFamily("rrkit_refused", "Requests refused for a limit", labels=["limit"])
        for limit, count in sorted(counts.refused_for_limit.items()):
            refused.add_metric([limit], count)
        yield refused
        capture, responses, unmatched = state.capture, state.http_store, state.unmatched
        kept_bytes = GaugeMetricFamily("rrkit_kept_bytes", "Bytes kept, by store", labels=["store"])
        kept = GaugeMetricFamily("rrkit_kept_entries", "Entries kept, by store", labels=["store"])
        for store, size, entries in (
            ("exchanges", capture.kept_bytes, len(capture.exchanges)),
            ("responses", responses.kept_bytes, len(responses)),
            ("unmatched", unmatched.kept_bytes, len(unmatched.recent())),
        ):
            kept_bytes.add_metric([store], size)
            kept.add_metric([store], entries)
        yield kept_bytes
        yield kept
        evicted = CounterMetricFamily("rrkit_evicted", "Entries evicted for the memory budget", labels=["store"])
        evicted.add_metric(["exchanges"], capture.evicted)
        evicted.add_metric(["responses"], responses.evicted)
        yield evicted
        yield GaugeMetricFamily("rrkit_memory_budget_bytes", "The memory budget (--limit memory)", state.limits.memory)
        yield GaugeMetricFamily("rrkit_connections", "WebSocket connections kept", len(capture.connections))
        yield CounterMetricFamily("rrkit_unmatched", "Requests nothing answered", unmatched.total)
        if state.sessions is not None and state.session is None:
            yield from _session_metrics(state.sessions)


def _session_metrics(sessions: Sessions) -> Iterator[Metric]:
    """The named sessions beside the default one's figures: one series per live session, so as many as
    `--max-sessions` at most (an ended session's series go with it; its exchanges stay counted in the totals of
    `rrkit_sessions_ended`)."""
    live = sessions.sessions()
    yield GaugeMetricFamily("rrkit_sessions", "Named sessions live", len(live))
    ended = CounterMetricFamily("rrkit_sessions_ended", "Named sessions ended, by why", labels=["reason"])
    for reason, count in sorted(sessions.ended.items()):
        ended.add_metric([reason], count)
    yield ended
    exchanges = CounterMetricFamily(
        "rrkit_session_exchanges",
        "Exchanges ended in each live named session, by transport and outcome",
        labels=["session", "transport", "outcome"],
    )
    kept = GaugeMetricFamily("rrkit_session_kept_bytes", "Bytes each live named session keeps", labels=["session"])
    for session in live:
        for (transport, outcome), count in sorted(session.state.counts.outcomes.items()):
            exchanges.add_metric([session.name, transport, outcome], count)
        kept.add_metric([session.name], session.kept_bytes())
    yield exchanges
    yield kept


def metrics_text(state: ServerState) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_ServerCollector(state))
    return generate_latest(registry)
