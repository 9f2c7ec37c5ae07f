"""Packaged defaults (installed as `precision_shell.defaults`); see default.toml."""
