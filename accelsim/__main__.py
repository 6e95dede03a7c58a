"""``python -m accelsim`` is the ``accelsim`` command."""

from accelsim.cli import program

program()
