"""Shell commands, one module per group; importing this package registers them all."""

from precision_shell.commands import (  # noqa: F401
    autocheck,
    compare,
    compare_summary,
    dump_config,
    graph,
    harvest,
    replay,
    report,
    system,
    tensor,
)
