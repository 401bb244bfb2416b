"""Scripts: what the fake server answers to each request and handshake, written in Python or in a file."""

from ..protocol.exceptions import ScriptError
from .builder import (
    accept_upgrade,
    custom_tool_call,
    error_event,
    error_frame,
    failed,
    file_search_call,
    function_call,
    image_generation_call,
    incomplete,
    reasoning,
    refusal,
    refuse_upgrade,
    reject,
    reply,
    side_frame,
    text,
    web_search_call,
)
from .loader import default_script, load_script, parse_script
from .models import Fault, Handshake, Match, Reply, Script, SideFrame, Step
from .select import NoMatch, ReplySource, RequestView

__all__ = [
    "Fault",
    "Handshake",
    "Match",
    "NoMatch",
    "Reply",
    "ReplySource",
    "RequestView",
    "Script",
    "ScriptError",
    "SideFrame",
    "Step",
    "accept_upgrade",
    "custom_tool_call",
    "default_script",
    "error_event",
    "error_frame",
    "failed",
    "file_search_call",
    "function_call",
    "image_generation_call",
    "incomplete",
    "load_script",
    "parse_script",
    "reasoning",
    "refusal",
    "refuse_upgrade",
    "reject",
    "reply",
    "side_frame",
    "text",
    "web_search_call",
]
