"""The import contract of ARCHITECTURE.md: arrows point down only, `rrkit.protocol` is sans-I/O, the front
ends are imported by nothing, and importing a low layer does not load the high ones."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "toolkit" / "rrkit"
WEB = ("starlette", "uvicorn", "anyio", "httpx", "httpcore", "h11", "httptools", "websockets", "click")
"""Web and command-line frameworks: the I/O layers' business, never the protocol's or the scripts'."""
FRONT_ENDS = ("rrkit.cli", "rrkit.pytest_plugin", "rrkit.__main__")
FOUNDATION = "lazy"
"""`rrkit.lazy`, the packages' lazy exports: standard library only, so every layer may import it."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every rrkit module this file imports, type-only imports and imports inside functions included."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("rrkit")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if not target.startswith("rrkit"):
                continue
            # `from . import events` imports the module `events`, not only its package
            submodules = {f"{target}.{alias.name}" for alias in node.names} & _MODULES
            found |= submodules or {target}
    return found


_MODULES = frozenset(_module_name(path) for path in PACKAGE.rglob("*.py"))


def _graph() -> dict[str, set[str]]:
    return {_module_name(path): _imports(path) for path in PACKAGE.rglob("*.py")}


def _layer(module: str) -> str:
    """A module's package inside rrkit (`rrkit.cassette.match` -> `cassette`; top-level modules are their own)."""
    return module.split(".")[1] if module.count(".") >= 1 else "rrkit"


def test_protocol_imports_no_other_rrkit_package() -> None:
    for module, imported in _graph().items():
        if _layer(module) == "protocol":
            assert {_layer(target) for target in imported} <= {"protocol", FOUNDATION}, (module, imported)


def test_files_imports_only_protocol() -> None:
    """`rrkit.files` reads and writes rrkit's files for the layers above it (scripts, cassettes, conformance)."""
    for module, imported in _graph().items():
        if _layer(module) == "files":
            assert {_layer(target) for target in imported} <= {"files", "protocol", FOUNDATION}, (module, imported)


def test_script_imports_only_files_and_protocol() -> None:
    for module, imported in _graph().items():
        if _layer(module) == "script":
            allowed = {"script", "files", "protocol", FOUNDATION}
            assert {_layer(target) for target in imported} <= allowed, (module, imported)


def test_references_import_only_protocol_and_files() -> None:
    """`rrkit.references` holds what others wrote (the OpenAPI description) as checks every judge may use."""
    for module, imported in _graph().items():
        if _layer(module) == "references":
            allowed = {"references", "protocol", "files", FOUNDATION}
            assert {_layer(target) for target in imported} <= allowed, (module, imported)


def test_relay_imports_only_protocol_and_script() -> None:
    """The relay forwards and relays; what answers from it (the server, the cassettes) imports it, never back."""
    for module, imported in _graph().items():
        if _layer(module) == "relay":
            allowed = {"relay", "protocol", "files", "script", FOUNDATION}
            assert {_layer(target) for target in imported} <= allowed, (module, imported)


def test_the_foundation_imports_only_the_standard_library() -> None:
    tree = ast.parse((PACKAGE / f"{FOUNDATION}.py").read_text(encoding="utf-8"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported and all(name.split(".")[0] in sys.stdlib_module_names | {"__future__"} for name in imported)


def _front_end(module: str) -> bool:
    return any(module == front or module.startswith(front + ".") for front in FRONT_ENDS)


def test_nothing_imports_the_front_ends() -> None:
    """The command line's own modules (the `rrkit.cli` package) import each other; nothing else imports them."""
    for module, imported in _graph().items():
        if not _front_end(module):
            assert not {target for target in imported if _front_end(target)}, (module, imported)


def test_the_demo_is_a_job_of_its_own_that_only_the_command_line_runs() -> None:
    """`rrkit demo` composes the client, the server and the cassettes; the tools share nothing through it."""
    importers = {module for module, imported in _graph().items() if "rrkit.demo" in imported}
    assert importers and all(_front_end(module) for module in importers), importers


def _assert_acyclic(edges: dict[str, set[str]], what: str) -> None:
    try:
        tuple(TopologicalSorter(edges).static_order())
    except CycleError as error:
        raise AssertionError(f"import cycle between {what}: " + " -> ".join(error.args[1])) from None


def test_packages_import_each_other_without_cycles() -> None:
    edges: dict[str, set[str]] = defaultdict(set)
    for module, imported in _graph().items():
        for target in imported:
            if target != "rrkit" and _layer(target) != _layer(module):
                edges[_layer(module)].add(_layer(target))
    _assert_acyclic(edges, "packages")


def test_modules_import_each_other_without_cycles_not_even_type_only_ones() -> None:
    """A package's `__init__` re-exports its modules; any other loop of imports between modules (type-only and
    in-function imports included) is a cycle."""
    graph = _graph()
    edges = {
        module: {t for t in imported if t in graph and t != module and not _is_package(t)}
        for module, imported in graph.items()
    }
    _assert_acyclic(edges, "modules")


def _is_package(module: str) -> bool:
    return (PACKAGE.parent / module.replace(".", "/") / "__init__.py").exists()


@pytest.mark.parametrize(
    ("module", "allowed"),
    [
        ("rrkit.protocol", {"protocol", FOUNDATION}),
        ("rrkit.script", {"protocol", "files", "script", FOUNDATION}),
        ("rrkit.references.check", {"protocol", "references", FOUNDATION}),
    ],
)
def test_importing_a_low_layer_loads_no_web_framework_and_no_higher_layer(module: str, allowed: set[str]) -> None:
    probe = f"import sys, {module}; print(' '.join(sorted(sys.modules)))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert not [name for name in loaded if name.split(".")[0] in WEB]
    assert {_layer(name) for name in loaded if name.startswith("rrkit.")} <= allowed


def test_every_files_module_loads_no_web_framework_and_no_higher_layer() -> None:
    modules = sorted(name for name in _MODULES if _layer(name) == "files")
    probe = f"import sys, {', '.join(modules)}; print(' '.join(sorted(sys.modules)))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert len(modules) > 1 and not [name for name in loaded if name.split(".")[0] in WEB]
    assert {_layer(name) for name in loaded if name.startswith("rrkit.")} <= {"protocol", "files", FOUNDATION}


def test_importing_the_server_probes_loads_no_server_no_differential_and_no_uvicorn() -> None:
    """The probes are data a server is judged by: reading them needs none of rrkit's own server."""
    probe = "import sys, rrkit.conform.server.probe; print(' '.join(sorted(sys.modules)))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert "rrkit.conform.server.probe" in loaded
    assert not {"rrkit.server", "rrkit.differential", "uvicorn"} & set(loaded)


def test_the_pytest_plugin_loads_no_server_and_no_web_framework_until_a_fixture_is_used() -> None:
    probe = "import sys, rrkit.pytest_plugin; print(' '.join(sorted(sys.modules)))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert not [name for name in loaded if name.split(".")[0] in WEB]
    assert {name for name in loaded if name.startswith("rrkit.")} == {
        "rrkit.pytest_plugin",
        "rrkit.lazy",
        "rrkit.cassette",
        "rrkit.cassette.recordmode",
    }


def test_a_pytest_session_that_uses_no_rrkit_fixture_loads_no_server(tmp_path: Path) -> None:
    """pytest looks up hook and `pytest_plugins` attributes on every plugin; the plugin's lazy attributes
    must not answer those by importing the server."""
    (tmp_path / "conftest.py").write_text(
        "import sys\n\n\ndef pytest_collection_finish(session):\n    print('LOADED', ' '.join(sorted(sys.modules)))\n",
        encoding="utf-8",
    )
    (tmp_path / "test_nothing.py").write_text("def test_nothing():\n    pass\n", encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--co", "-q", "-s", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    loaded = next(line for line in run.stdout.splitlines() if line.startswith("LOADED")).split()[1:]
    assert "rrkit.pytest_plugin" in loaded
    assert not [name for name in loaded if name.split(".")[0] in ("starlette", "uvicorn", "websockets")]
    assert "rrkit.plugin_server" not in loaded
