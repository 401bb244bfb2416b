"""`python -m rrkit` runs the command line."""

from .cli import run

run()
