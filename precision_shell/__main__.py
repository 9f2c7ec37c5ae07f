"""`python -m precision_shell`."""

from precision_shell.entry import main

raise SystemExit(main())
