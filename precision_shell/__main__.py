"""`python -m precision_shell`."""

from precision_shell.cli import main

raise SystemExit(main())
