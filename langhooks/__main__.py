"""``python -m langhooks``: the command line."""

from .cli import main

raise SystemExit(main())
