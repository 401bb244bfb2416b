"""Fuzz tests (hypothesis) for what rrkit reads from outside: SSE bytes, HTTP bodies, WebSocket frames, script and
cassette files. Two profiles, registered in tests/fuzz/conftest.py: `ci` (the default, a few thousand cases in all,
run by `.ci/run` with the rest of the suite) and `deep` (10x, on demand: `HYPOTHESIS_PROFILE=deep pytest tests/fuzz`).

Each test asks for `cases(n)`: n examples under `ci`, scaled with the profile's `max_examples` under another one. The
profile is applied per test (`fuzz(n)`), not loaded globally: the other hypothesis tests keep their own settings."""

from __future__ import annotations

import copy
import json
import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

CI_BASE = 100
"""`max_examples` of the `ci` profile: what `cases(n)` is relative to."""

_UNTIMED = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}  # two shared cores time nothing
settings.register_profile("ci", max_examples=CI_BASE, print_blob=True, **_UNTIMED)
settings.register_profile("deep", max_examples=CI_BASE * 10, print_blob=True, **_UNTIMED)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")


def cases(ci: int) -> int:
    """`ci` examples under the `ci` profile, proportionally more under a bigger one."""
    return max(1, ci * settings.get_profile(PROFILE).max_examples // CI_BASE)


def fuzz(ci: int, **overrides: Any) -> settings:
    """The fuzz profile's settings with `cases(ci)` examples (deadline off: loopback I/O makes timing noisy)."""
    return settings(settings.get_profile(PROFILE), max_examples=cases(ci), **overrides)


# -- JSON values, and JSON text a strict parser must refuse ------------------------------------------------------

LONE_SURROGATES = st.integers(0xD800, 0xDFFF).map(chr)
HUGE_INTS = st.one_of(
    st.integers(),
    st.integers(2**63 - 2, 2**64 + 2),
    st.integers(-(2**64) - 2, -(2**63) + 2),
    st.integers(2**64, 2**300),
    st.integers(-(2**300), -(2**64)),
)
TEXT = st.text(max_size=30) | st.builds(
    lambda a, s, b: a + s + b, st.text(max_size=5), LONE_SURROGATES, st.text(max_size=5)
)


class Raw:
    """JSON text written as is where a value would be: `NaN`, `Infinity`, `1e999`, 300 nested lists, ..."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"Raw({self.text[:40]!r}{'...' if len(self.text) > 40 else ''})"


RAW_LITERALS = st.one_of(
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "-1e999", "1e-999", "-0", "0.0e0", "1E400"]),
    st.integers(1, 400).map(lambda n: "[" * n + "]" * n),  # around MAX_DEPTH (100) and beyond
    st.integers(1, 400).map(lambda n: '{"a":' * n + "1" + "}" * n),
    st.sampled_from([100_000]).map(lambda n: "[" * n + "]" * n),  # what once hit RecursionError
    st.integers(19, 400).map(lambda n: "9" * n),  # integers orjson would turn into floats
).map(Raw)

SCALARS = st.one_of(st.none(), st.booleans(), HUGE_INTS, st.floats(allow_nan=False, allow_infinity=False), TEXT)
JSON_VALUES = st.recursive(
    SCALARS | RAW_LITERALS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(TEXT, children, max_size=4),
    max_leaves=20,
)
"""JSON values with the families issue 12 lists: lone surrogates, big integers, NaN/Infinity, deep nesting."""
PLAIN_JSON = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(TEXT, children, max_size=4),
    max_leaves=20,
)
"""JSON values as Python writes them (no `Raw` text): lone surrogates and big integers, no NaN."""


def json_text(value: Any, *, ascii_only: bool = True) -> str:
    """`value` as JSON text, each `Raw` written as its text. `ascii_only` escapes lone surrogates (`\\ud800`);
    without it they stay raw characters (encode with `surrogatepass` for the bytes a careless client sends)."""
    raws: list[str] = []

    def plain(item: Any) -> Any:
        if isinstance(item, Raw):
            raws.append(item.text)
            return f"\x00raw{len(raws) - 1}\x00"
        if isinstance(item, dict):
            return {key: plain(child) for key, child in item.items()}
        if isinstance(item, list):
            return [plain(child) for child in item]
        return item

    text = json.dumps(plain(value), ensure_ascii=ascii_only, allow_nan=True)
    for index, raw in enumerate(raws):
        marker = json.dumps(f"\x00raw{index}\x00", ensure_ascii=ascii_only)
        text = text.replace(marker, raw, 1)
    return text


def to_bytes(text: str, encoding: str) -> bytes:
    """`text` in `encoding`; a lone surrogate as the bytes no UTF-8 decoder accepts (`surrogatepass`)."""
    return text.encode(encoding, "replace" if encoding == "latin-1" else "surrogatepass")


ENCODINGS = st.sampled_from(["utf-8", "utf-8", "utf-8", "utf-16", "latin-1"])


# -- documents and their mutations (script and cassette files) ---------------------------------------------------


def _places(document: Any) -> list[tuple[Any, Any]]:
    """Every (container, key) in `document`: where a mutation can act."""
    found: list[tuple[Any, Any]] = []
    stack = [document]
    while stack:
        item = stack.pop()
        pairs = item.items() if isinstance(item, dict) else enumerate(item) if isinstance(item, list) else ()
        for key, child in pairs:
            found.append((item, key))
            stack.append(child)
    return found


MUTATIONS = st.sampled_from(["drop", "replace", "wrap", "stringify", "negate", "empty"])


@st.composite
def mutated(draw: st.DrawFn, document: Any, values: st.SearchStrategy[Any]) -> Any:
    """`document` (deep-copied) with a few places changed: a key dropped, a value replaced by one of `values`,
    wrapped in a list, turned into its string, negated (numbers, booleans) or emptied."""
    document = copy.deepcopy(document)
    for _ in range(draw(st.integers(1, 4))):
        places = _places(document)
        if not places:
            break
        container, key = draw(st.sampled_from(places))
        mutation = draw(MUTATIONS)
        value = container[key]
        if mutation == "drop":
            del container[key]
        elif mutation == "replace":  # a copy: a later mutation must not change what the strategy holds
            container[key] = copy.deepcopy(draw(values))
        elif mutation == "wrap":
            container[key] = [value]
        elif mutation == "stringify":
            container[key] = json.dumps(value, default=str)
        elif mutation == "negate" and isinstance(value, bool):
            container[key] = not value
        elif mutation == "negate" and isinstance(value, int | float):
            container[key] = -value - 1
        elif mutation == "empty":
            container[key] = type(value)() if isinstance(value, dict | list | str) else None
    return document
