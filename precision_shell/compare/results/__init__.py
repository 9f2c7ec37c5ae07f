"""The result store: the CSV schema, the summary, the latest result, the threshold rule."""
