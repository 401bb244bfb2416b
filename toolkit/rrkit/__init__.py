"""rrkit: record/replay protocol testing toolkit for the OpenAI Responses streaming protocol."""

from .script import Script, load_script
from .server import FakeServer

__all__ = ["FakeServer", "Script", "load_script"]
