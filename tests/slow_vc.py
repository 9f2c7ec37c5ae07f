"""The start of a script that runs the shell in its own process with a compare engine taking
0.2 s per dump file, so that a test can stop or kill it mid-run; each test adds how the
shell is started."""

SLOW_ENGINE = """
import sys, time
from precision_shell.compare.pipeline import execute
real = execute.run_tasks
def slow(tasks, *args, **kwargs):
    for result in real(tasks, *args, **kwargs):
        time.sleep(0.2)
        yield result
execute.run_tasks = slow
"""
