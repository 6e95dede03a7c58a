"""``python -m accelsim`` is the ``accelsim`` command."""

import sys

from accelsim.cli import main

sys.exit(main())
