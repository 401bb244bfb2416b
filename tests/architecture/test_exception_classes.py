"""Every exception class rrkit defines stands under `RRKitError`, so one `except` catches whatever rrkit raises, or
is private to its module (a leading underscore: raised and caught there, never met by a user). Warnings aside: they
are issued, not raised for a caller to handle."""

from __future__ import annotations

import importlib
import pkgutil

import click

import rrkit
from rrkit.cli.group import CheckFailed, FileError
from rrkit.protocol.exceptions import BadRequest, RRKitError
from rrkit.protocol.jsontext import UnsafeJSON
from rrkit.protocol.resources import BadPage


def _modules() -> list[str]:
    """Every module of the package but `rrkit.__main__`, which runs the command line when imported."""
    walked = pkgutil.walk_packages(rrkit.__path__, "rrkit.")
    return sorted(info.name for info in walked if info.name.rpartition(".")[2] != "__main__")


def _public_exception_classes() -> dict[str, type[BaseException]]:
    """Each public exception class by its home (`module.Name`), found in the module that defines it."""
    found: dict[str, type[BaseException]] = {}
    for name in _modules():
        for attribute, value in vars(importlib.import_module(name)).items():
            defined_here = isinstance(value, type) and value.__module__ == name
            if defined_here and issubclass(value, BaseException) and not attribute.startswith("_"):
                found[f"{name}.{attribute}"] = value
    return found


def test_the_walk_reaches_the_exceptions_of_every_layer() -> None:
    expected = {
        "rrkit.protocol.exceptions.ScriptError",
        "rrkit.client.errors.StreamDropped",
        "rrkit.cli.group.FileError",
        "rrkit.server.respond.RequestRefused",
        "rrkit.server.stream.ChannelGone",
    }
    assert expected <= set(_public_exception_classes())


def test_every_public_exception_class_stands_under_rrkit_error() -> None:
    offenders = sorted(
        name for name, error in _public_exception_classes().items() if not issubclass(error, (RRKitError, Warning))
    )
    assert not offenders, f"outside RRKitError (derive them from it, or make them private): {offenders}"


def test_errors_under_the_root_keep_the_bases_their_callers_catch() -> None:
    assert issubclass(UnsafeJSON, BadRequest) and issubclass(UnsafeJSON, ValueError)
    assert issubclass(BadPage, BadRequest) and issubclass(BadPage, ValueError)
    assert issubclass(FileError, click.ClickException) and issubclass(CheckFailed, click.ClickException)
    assert (FileError("x").exit_code, CheckFailed("x").exit_code) == (2, 1)
