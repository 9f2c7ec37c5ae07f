"""Shell commands, one module per group; importing this package registers them all."""

from precision_shell.commands import graph, system, tensor  # noqa: F401
