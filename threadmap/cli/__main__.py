"""``python -m threadmap.cli ...``: the command line (as ``python -m threadmap``)."""

from threadmap.cli import entry

entry()
