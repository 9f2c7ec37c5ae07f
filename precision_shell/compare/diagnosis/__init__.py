"""Diagnosis of a compare: root cause, advisor, graph checks."""
