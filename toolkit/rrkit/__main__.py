"""`python -m rrkit` runs the command line."""

from .cli import main

main()
