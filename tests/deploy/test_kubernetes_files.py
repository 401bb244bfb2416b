"""The Kubernetes recipe as Kubernetes and Helm read it, checked without a cluster: the manifest's HAProxy
configuration is deploy/haproxy/haproxy.cfg (the one the fleet test runs) with a server line per pod; its ports,
names and replica count agree with each other, with the chart's values and with rrkit's own options; the chart reads
the same haproxy.cfg and only values it declares; HAProxy accepts the configuration."""

from __future__ import annotations

import re
import subprocess
from typing import Any

import click
import yaml

from rrkit.cli.serving import serve

from .recipes import HAPROXY, KUBERNETES, fleet_module, healthcheck_command, needs_haproxy

CHART = KUBERNETES / "chart"
SESSION_KEY = "req.fhdr(x-rrkit-session,1)"


def _manifest() -> dict[tuple[str, str], dict[str, Any]]:
    docs = yaml.safe_load_all((KUBERNETES / "rrkit.yaml").read_text(encoding="utf-8"))
    return {(doc["kind"], doc["metadata"]["name"]): doc for doc in docs}


def _values() -> dict[str, Any]:
    loaded = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {entry["name"]: entry.get("value", entry.get("valueFrom")) for entry in container["env"]}


def test_the_manifests_haproxy_cfg_is_the_fleets_with_one_server_line_per_pod_by_its_stable_name() -> None:
    manifest, values = _manifest(), _values()
    pods = manifest[("StatefulSet", "rrkit")]
    assert pods["spec"]["replicas"] == values["replicas"]
    assert pods["spec"]["serviceName"] == "rrkit-pods"
    assert manifest[("Service", "rrkit-pods")]["spec"]["clusterIP"] == "None"  # headless: a DNS name per pod
    port = values["port"]
    servers = [
        (f"rrkit-{n}", f"rrkit-{n}.rrkit-pods:{port} resolvers cluster init-addr last,libc,none")
        for n in range(values["replicas"])
    ]
    config = manifest[("ConfigMap", "rrkit-haproxy")]["data"]["haproxy.cfg"]
    assert config.startswith(fleet_module().render(servers))  # the same cfg, byte for byte, then its resolvers
    assert config.split(fleet_module().render(servers))[1].startswith("resolvers cluster\n    parse-resolv-conf\n")
    assert "balance hash var(txn.rrkit_session)" in config and SESSION_KEY in config
    directives = [line.strip() for line in config.splitlines() if not line.strip().startswith("#")]
    assert "hash-type consistent sdbm avalanche" in directives
    assert not [line for line in directives if line.startswith(("hash-balance-factor", "option redispatch"))]


def test_ports_names_and_the_admin_token_agree_between_the_pods_the_balancer_and_the_services() -> None:
    manifest, values = _manifest(), _values()
    (rrkit,) = manifest[("StatefulSet", "rrkit")]["spec"]["template"]["spec"]["containers"]
    (haproxy,) = manifest[("Deployment", "rrkit-haproxy")]["spec"]["template"]["spec"]["containers"]
    rrkit_env, haproxy_env = _env(rrkit), _env(haproxy)
    assert rrkit_env["RRKIT_PORT"] == str(values["port"]) == str(rrkit["ports"][0]["containerPort"])
    assert manifest[("Service", "rrkit-pods")]["spec"]["ports"][0]["port"] == values["port"]
    assert haproxy_env["RRKIT_FLEET_BIND"] == f":{values['balancer']['port']}"
    assert haproxy["ports"][0]["containerPort"] == values["balancer"]["port"]
    service = manifest[("Service", "rrkit")]["spec"]
    assert service["selector"] == {"app": "rrkit-haproxy"} and service["ports"][0]["targetPort"] == "http"
    secret = {"secretKeyRef": {"name": values["adminTokenSecret"], "key": "token"}}
    assert rrkit_env["RRKIT_ADMIN_TOKEN"] == haproxy_env["RRKIT_ADMIN_TOKEN"] == secret  # the health check's token
    assert rrkit["readinessProbe"]["exec"]["command"] == healthcheck_command()  # the image's, word for word
    assert haproxy["args"] == ["-f", "/usr/local/etc/haproxy/haproxy.cfg"]
    assert haproxy["image"] == values["balancer"]["image"] and rrkit["image"] == values["image"]


def test_the_pods_args_are_the_charts_and_each_an_option_of_rrkit_serve_the_service_name_an_admin_host() -> None:
    (rrkit,) = _manifest()[("StatefulSet", "rrkit")]["spec"]["template"]["spec"]["containers"]
    args = _env(rrkit)["RRKIT_ARGS"].split()
    assert args == [*_values()["args"], "--admin-host", "rrkit"]  # clients reach the admin API as http://rrkit:PORT
    options = {name for param in serve.params if isinstance(param, click.Option) for name in param.opts}
    assert {arg for arg in args if arg.startswith("--")} <= options


def test_the_chart_reads_the_same_haproxy_cfg_and_only_values_it_declares() -> None:
    assert (CHART / "files" / "haproxy.cfg").resolve() == (HAPROXY / "haproxy.cfg").resolve()
    templates = "".join(path.read_text(encoding="utf-8") for path in sorted((CHART / "templates").glob("*.yaml")))
    assert '.Files.Get "files/haproxy.cfg" | replace "# @servers@"' in templates
    values = _values()
    for path in set(re.findall(r"\.Values\.([\w.]+)", templates)):
        node: Any = values
        for key in path.split("."):
            assert isinstance(node, dict) and key in node, f".Values.{path} is not in values.yaml"
            node = node[key]
    assert yaml.safe_load((CHART / "Chart.yaml").read_text(encoding="utf-8"))["apiVersion"] == "v2"


@needs_haproxy
def test_haproxy_accepts_the_manifests_configuration(tmp_path: Any) -> None:
    config = tmp_path / "haproxy.cfg"
    config.write_text(_manifest()[("ConfigMap", "rrkit-haproxy")]["data"]["haproxy.cfg"], encoding="utf-8")
    env = {"RRKIT_FLEET_BIND": ":8080", "RRKIT_ADMIN_TOKEN": "t", "PATH": "/usr/sbin:/usr/bin:/bin"}
    checked = subprocess.run(
        [fleet_module().find_haproxy(), "-c", "-f", str(config)], env=env, capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "Configuration file is valid" in checked.stdout + checked.stderr
