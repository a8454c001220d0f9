"""``python -m threadmap ...``: the same command line, with the same exit statuses, as the
``threadmap`` script (without this file Python itself would exit 1 for any arguments)."""

from threadmap.cli import entry

entry()
