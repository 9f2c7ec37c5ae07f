"""Imports every view module so their `@renders` registrations take effect."""

from precision_shell.render import (  # noqa: F401
    compare_views,
    diagnosis_views,
    divergence_views,
    foreign_views,
    graph_views,
    harvest_views,
    replay_views,
    report_views,
    statistics_views,
    system_views,
    tensor_views,
    workspace_views,
)
