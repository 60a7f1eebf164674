"""`python -m sessiontree ...` is the `sessiontree` command."""

from .cli import main

raise SystemExit(main())
