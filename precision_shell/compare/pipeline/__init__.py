"""A compare's pipeline: plan the tasks, run them on workers, stream the rows."""
