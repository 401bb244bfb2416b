"""Scripts: what the fake server answers to each request and handshake, written in Python or in a file."""

from .builder import (
    accept_upgrade,
    custom_tool_call,
    error_event,
    error_frame,
    failed,
    function_call,
    incomplete,
    reasoning,
    refusal,
    refuse_upgrade,
    reject,
    reply,
    text,
)
from .loader import ScriptError, default_script, load_script, parse_script
from .models import ErrorFrame, Fault, Handshake, Match, Reply, Script, Step, UsageSpec
from .render import WARMUP_REPLY, render_reply
from .select import NoMatch, ReplySource, RequestView, ScriptState

__all__ = [
    "WARMUP_REPLY",
    "ErrorFrame",
    "Fault",
    "Handshake",
    "Match",
    "NoMatch",
    "Reply",
    "ReplySource",
    "RequestView",
    "Script",
    "ScriptError",
    "ScriptState",
    "Step",
    "UsageSpec",
    "accept_upgrade",
    "custom_tool_call",
    "default_script",
    "error_event",
    "error_frame",
    "failed",
    "function_call",
    "incomplete",
    "load_script",
    "parse_script",
    "reasoning",
    "refusal",
    "refuse_upgrade",
    "reject",
    "render_reply",
    "reply",
    "text",
]
