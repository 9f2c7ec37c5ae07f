"""precision_shell: find where a ported neural network loses accuracy."""

__version__ = "0.1.0.dev0"
