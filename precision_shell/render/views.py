"""Imports every view module so their `@renders` registrations take effect."""

from precision_shell.render import graph_views, system_views, tensor_views  # noqa: F401
