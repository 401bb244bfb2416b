"""Schemathesis against the fake server with the OpenAI OpenAPI description's routes (rrkit's vendored excerpt,
`rrkit.references.openapi()`): on every operation, with valid and invalid requests, with random ids and with ids the
server holds, no 5xx, no error that is not the API's JSON error, no successful body outside the spec's schema, and no
405 to a method the spec (and the SDK) has. Bounded: `cases(EXAMPLES)` requests per operation and pass (marker
`schemathesis`, its own step in .ci/run)."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given
from schemathesis import Case, GenerationMode
from schemathesis.core.failures import Failure, FailureGroup
from schemathesis.core.result import Ok
from schemathesis.openapi.checks import JsonSchemaError
from schemathesis.specs.openapi.checks import response_schema_conformance

from rrkit.protocol.errors import error_body
from rrkit.references import ARTEFACTS, openapi
from rrkit.references.schemas import type_values

from . import cases, fuzz
from .conftest import GuardedServer

EXAMPLES = 40
"""Requests per operation and pass under the `ci` profile (10x under `deep`)."""
ERROR_FIELDS = set(error_body("")["error"])
Schema = dict[str, Any]


def _map_discriminators(spec: Schema) -> None:
    """Each discriminator the mapping of its branches' `type` values, as rrkit's own checks choose a branch."""
    schemas = spec["components"]["schemas"]

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            discriminator = node.get("discriminator")
            if isinstance(discriminator, dict) and "mapping" not in discriminator:
                assert discriminator["propertyName"] == "type", discriminator
                branches = [branch for branch in node.get("oneOf") or node.get("anyOf") or [] if "$ref" in branch]
                discriminator["mapping"] = {
                    value: branch["$ref"] for branch in branches for value in sorted(type_values(branch, schemas))
                }
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(spec)


PREPARATIONS: dict[str, Callable[[Schema], None]] = {"discriminator_without_mapping": _map_discriminators}
"""What only Schemathesis needs of an artefact of the spec, applied to its copy, by the artefact's name in
rrkit.references.ARTEFACTS (which says why; the excerpt itself carries the fixes every reader needs). An error's
body is judged by the API's error shape, never by the spec's schema (`bare_error_404`, `only_200_documented`)."""


def loaded_spec() -> Schema:
    spec = openapi()
    for prepare in PREPARATIONS.values():
        prepare(spec)
    return spec


class Findings:
    """What the run saw: statuses by operation, and each kind of finding once with its first example."""

    def __init__(self) -> None:
        self.statuses: Counter[tuple[str, int]] = Counter()
        self.found: dict[tuple[str, str], str] = {}
        self.count: Counter[tuple[str, str]] = Counter()

    def add(self, case: Case[Any], kind: str, example: str) -> None:
        key = (f"{case.method.upper()} {case.operation.path}", kind)
        self.count[key] += 1
        self.found.setdefault(key, example[:600])

    def judge(self, case: Case[Any], response: schemathesis.Response) -> None:
        status, media = response.status_code, _media(response)
        self.statuses[(f"{case.method.upper()} {case.operation.path}", status)] += 1
        seen = f"{case.method.upper()} {case.formatted_path} -> {status} {media}: {response.content[:300]!r}"
        if status >= 500:
            self.add(case, "server error", seen)
        elif status == 405:
            self.add(case, "405 to a method the SDK has", seen)
        elif status >= 400 and not _json_error(media, response.content):
            self.add(case, "an error that is not the API's JSON error", seen)
        elif status < 300 and media == "application/json":
            for problem in _schema_problems(case, response):
                self.add(case, f"schema: {problem}", seen)
        elif status < 300 and media != "text/event-stream":
            self.add(case, f"a successful body as {media!r}", seen)

    def report(self) -> str:
        return "\n".join(
            f"{n}x {where}: {kind}\n    {self.found[(where, kind)]}" for (where, kind), n in self.count.items()
        )


def _media(response: schemathesis.Response) -> str:
    value = response.headers.get("content-type", [""])
    return str(value[0] if isinstance(value, list) else value).split(";")[0].strip()


def _json_error(media: str, content: bytes) -> bool:
    try:
        body = json.loads(content)
    except ValueError:
        return False
    shaped = isinstance(body, dict) and list(body) == ["error"] and isinstance(body["error"], dict)
    return media == "application/json" and shaped and set(body["error"]) == ERROR_FIELDS


def _schema_problems(case: Case[Any], response: schemathesis.Response) -> list[str]:
    """The response schema's violations, each as `field/path: message` (a generalised path: item indices as `*`)."""
    try:
        case.validate_response(response, checks=[response_schema_conformance])
    except (Failure, FailureGroup) as failed:
        failures = failed.exceptions if isinstance(failed, FailureGroup) else (failed,)
        return [_problem(failure) for failure in failures]
    return []


def _problem(failure: Failure) -> str:
    """A violation as `field/path: message`, item indices as `*`, the offending value named by its type only."""
    if not isinstance(failure, JsonSchemaError):
        return f"(the body): {failure.message.splitlines()[0].rstrip(',')}"
    path = "/".join("*" if isinstance(part, int) else str(part) for part in failure.instance_path)
    message = str(failure._raw_message)
    if message.startswith(("{", "[")) and " is " in message and isinstance(failure.instance, dict | list):
        kind = failure.instance.get("type") if isinstance(failure.instance, dict) else None
        shown = f"an object of type {kind!r}" if kind else f"a {type(failure.instance).__name__}"
        message = shown + message[message.rindex(" is ") :]
    return f"{path or '(the body)'}: {message.splitlines()[0][:200]}"


@pytest.fixture(scope="module")
def guarded() -> Iterator[GuardedServer]:
    server = GuardedServer()
    yield server
    server.finish()


def held_ids(base_url: str) -> dict[str, str]:
    """A stored response, a conversation and an item of it, made on the server: the ids a bound pass uses."""
    with httpx.Client(base_url=base_url, timeout=30, trust_env=False) as client:
        response = client.post("/responses", json={"model": "gpt-test", "input": "Hi."}).json()
        conversation = client.post("/conversations", json={"items": [{"role": "user", "content": "Hi."}]}).json()
        items = client.get(f"/conversations/{conversation['id']}/items").json()
    return {
        "response_id": response["id"],
        "conversation_id": conversation["id"],
        "item_id": items["data"][0]["id"],
        "model": "gpt-test",
    }


def run_pass(guarded: GuardedServer, findings: Findings, strategy: Any) -> None:
    @fuzz(EXAMPLES, phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(case=strategy)
    def one(case: Case[Any]) -> None:
        guarded.attach()
        findings.judge(case, case.call(timeout=30))
        guarded.check()

    one()


@pytest.mark.schemathesis
@pytest.mark.timeout(15 * cases(EXAMPLES))  # 600 s under `ci`: ten times what it takes here
def test_schemathesis_finds_no_server_error_no_error_outside_json_and_no_body_outside_the_spec(
    guarded: GuardedServer,
) -> None:
    base_url = guarded.server.http_url
    schema = schemathesis.openapi.from_dict(loaded_spec())
    schema.config.update(base_url=base_url)
    operations = []
    for result in schema.get_all_operations():
        assert isinstance(result, Ok), result.err()  # the loaded spec's every operation is usable
        operations.append(result.ok())
    findings, started = Findings(), time.monotonic()
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            run_pass(guarded, findings, operation.as_strategy(generation_mode=mode))
    held = held_ids(base_url)
    bound = [operation for operation in operations if "{" in operation.path]
    for operation in sorted(bound, key=lambda operation: operation.method.upper() == "DELETE"):  # deletes last
        names = {name: held[name] for name in held if "{" + name + "}" in operation.path}
        run_pass(guarded, findings, operation.as_strategy(path_parameters=names))
    seconds = time.monotonic() - started
    requests = sum(findings.statuses.values())
    print(f"schemathesis: {requests} requests on {len(operations)} operations in {seconds:.0f} s")
    per_operation = Counter(name for (name, _), n in findings.statuses.items() for _ in range(n))
    assert set(per_operation) == {f"{op.method.upper()} {op.path}" for op in operations}
    assert min(per_operation.values()) >= min(cases(EXAMPLES), 10), per_operation  # every pass ran
    assert not findings.count, "schemathesis found:\n" + findings.report()


def test_each_preparation_implements_a_listed_artefact_and_changes_the_excerpt() -> None:
    spec, excerpt = loaded_spec(), openapi()
    assert set(PREPARATIONS) <= {artefact.name for artefact in ARTEFACTS}
    item_field = spec["components"]["schemas"]["ItemField"]["discriminator"]["mapping"]
    assert item_field["compaction"] == "#/components/schemas/CompactionBody"
    assert "mapping" not in excerpt["components"]["schemas"]["ItemField"]["discriminator"]
    for name, prepare in PREPARATIONS.items():
        again = openapi()
        prepare(again)
        assert again != excerpt, f"{name}: the preparation changes nothing"
