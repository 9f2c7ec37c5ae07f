"""vc on a Dask cluster: `--scheduler tcp://HOST:PORT` (a running dask.distributed cluster) or
`--cluster local[:N]` (a LocalCluster of N one-thread worker processes, started for one vc).

Only the executor differs from the thread and process pools: `Client.get_executor()` is a
concurrent.futures Executor, so the engine's batching, in-flight window and task order are
the same (`engine.run_tasks(pool=...)`). A task names its dump files by path, so every worker
must see the same files (a shared filesystem); what comes back is the small result record.
A worker that dies mid-compare costs nothing but time: the scheduler runs its tasks again
elsewhere, and each task's rows are taken once, at its position. A scheduler that goes away
ends the compare early, like Ctrl-C: the rows written stay and the summary says partial. So
does a cluster left with no worker at all for `no_worker_wait_s` (every worker died and none
came back): its tasks would wait for one forever.

`distributed` is an optional extra, imported here and only when a compare asks for a cluster.
"""

from __future__ import annotations

import logging
import math
import os
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Executor
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from precision_shell.compare.pipeline.engine import default_workers
from precision_shell.errors import PrecisionError

INSTALL_HINT = "pip install 'precision_shell[dask]'"
# Reaching the scheduler (each attempt, and the client's reconnect after a lost connection).
CONNECT_TIMEOUT_S = 5.0
# A running scheduler with no worker yet: how long to wait for one before giving up.
WORKER_WAIT_S = 10.0
# Closing the client and a local cluster; a dead scheduler must not hold `vc` up.
CLOSE_TIMEOUT_S = 10.0
# Mid-compare, a cluster with no worker for this long is given up (the setting
# parallelism.no_worker_wait_s); its worker count is asked at most once per poll interval.
NO_WORKER_WAIT_S = 30.0
_WORKER_POLL_S = 0.5
# What each worker process of our local cluster runs when it starts (a Dask worker preload).
WORKER_PRELOAD = "precision_shell.compare.pipeline.dask_preload"


@dataclass(frozen=True)
class DaskTarget:
    """Where a compare's tasks go: a running scheduler's address, or a local cluster."""

    scheduler: str = ""
    local_workers: int = 0  # with no scheduler: the LocalCluster's worker processes
    no_worker_wait_s: float = NO_WORKER_WAIT_S  # see DaskPool.lost

    @classmethod
    def from_cluster(cls, text: str) -> DaskTarget:
        """`local` (one worker per core) or `local:N`."""
        name, colon, count = text.partition(":")
        if name != "local" or (colon and not (count.isdigit() and int(count) > 0)):
            raise PrecisionError(f"vc: --cluster {text}: give local or local:N (N workers)")
        return cls(local_workers=int(count) if count else default_workers())

    @property
    def label(self) -> str:
        if self.scheduler:
            return f"Dask scheduler {self.scheduler}"
        return f"local Dask cluster ({self.local_workers} workers)"


class DaskPool:
    """A connected client as the engine's `SharedPool`."""

    def __init__(self, client: Any, target: DaskTarget) -> None:
        self.client = client
        self.target = target
        self._executor: Executor = client.get_executor(pure=False)  # a vc's tasks never repeat
        self._lost: str | None = None
        self._polled = -math.inf  # when the worker count was last asked
        self._no_worker_since: float | None = None

    @property
    def executor(self) -> Executor:
        return self._executor

    def worker_count(self) -> int:
        try:
            return sum(self.client.nthreads().values())
        except Exception:  # noqa: BLE001 - a scheduler gone right now: lost() says so next
            return 1

    def lost(self) -> str | None:
        """Set for good once the client has lost the scheduler (it cancels every task then), or
        once the cluster has had no worker for `target.no_worker_wait_s` (its tasks wait)."""
        if self._lost is None and self.client.status not in ("running", "newly-created"):
            self._lost = f"lost the {self.target.label} mid-compare"
        if self._lost is None:
            self._check_workers()
        return self._lost

    def _check_workers(self) -> None:
        now = time.monotonic()
        if now - self._polled < _WORKER_POLL_S:
            return
        self._polled = now
        try:
            workers = len(self.client.nthreads(callback_timeout=CONNECT_TIMEOUT_S))
        except Exception:  # noqa: BLE001 - a scheduler gone right now: the status says so next
            return
        if workers:
            self._no_worker_since = None
        elif self._no_worker_since is None:
            self._no_worker_since = now
        elif now - self._no_worker_since >= self.target.no_worker_wait_s:
            self._lost = (
                f"the {self.target.label} has no workers left (none for "
                f"{self.target.no_worker_wait_s:g} s)"
            )


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise PrecisionError(
            f"vc: --scheduler and --cluster need dask.distributed: {INSTALL_HINT}"
        ) from None
    return distributed


def _quiet() -> None:
    """distributed logs to stderr (its client even after it is closed, from its own thread);
    vc says what matters itself, in one line. For the rest of the process, once a vc used Dask."""
    for name in ["distributed", *logging.root.manager.loggerDict]:
        if name == "distributed" or name.startswith("distributed."):
            logging.getLogger(name).setLevel(logging.CRITICAL)


def _connect(distributed: Any, target: DaskTarget) -> tuple[Any, Any]:
    """(client, the local cluster or None); raises PrecisionError in one line."""
    if target.scheduler:
        try:
            client = distributed.Client(
                target.scheduler, timeout=CONNECT_TIMEOUT_S, set_as_default=False
            )
        except (OSError, TimeoutError, ValueError) as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise PrecisionError(f"vc: cannot reach the {target.label}: {reason}") from None
        try:
            client.wait_for_workers(1, timeout=WORKER_WAIT_S)
        except (OSError, TimeoutError) as exc:
            client.close(timeout=CLOSE_TIMEOUT_S)
            raise PrecisionError(
                f"vc: the {target.label} has no workers after {WORKER_WAIT_S:g} s "
                f"(start `dask worker {target.scheduler}` where the dumps are): {exc}"
            ) from None
        return client, None
    import dask

    # The workers run as the process pool's do: no memory limit (they hold no data between
    # tasks), and none of the nanny's pre-spawn variables (one BLAS thread, an aggressive
    # malloc trim), which it would also leave in this process's environment.
    with dask.config.set({"distributed.nanny.pre-spawn-environ": {}}), _workers_ignore_ctrl_c():
        cluster = distributed.LocalCluster(
            n_workers=target.local_workers,
            threads_per_worker=1,
            processes=True,
            memory_limit=0,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",  # an HTTP server starts anyway: any free port
            silence_logs=logging.CRITICAL,
            preload=[WORKER_PRELOAD],  # each worker, restarted ones too, ignores Ctrl-C
        )
    try:
        client = distributed.Client(cluster, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
        client.wait_for_workers(target.local_workers, timeout=60)
    except BaseException:
        cluster.close(timeout=CLOSE_TIMEOUT_S)
        raise
    return client, cluster


@contextmanager
def _workers_ignore_ctrl_c() -> Iterator[None]:
    """The worker processes started inside ignore Ctrl-C for good (an ignored signal stays
    ignored across exec, and Python keeps it so): the terminal sends SIGINT to its whole
    foreground process group, and a worker that took it would die printing tracebacks, the
    compare then blaming a lost cluster. The shell takes Ctrl-C, stops the compare and closes
    the cluster. This process ignores it too meanwhile: a Ctrl-C then would leave a cluster
    half started. Only the main thread can set a handler; elsewhere nothing changes.
    A worker its nanny restarts later is spawned by a thread of the cluster's event loop,
    which starts in here: SIGINT is blocked in this thread meanwhile, so that thread and
    every thread it starts inherit the blocked mask, and so does each worker they spawn
    (a signal mask survives fork and exec): a restarted worker is born deaf to Ctrl-C, even
    while it imports, and WORKER_PRELOAD then ignores it for good. The kernel gives a
    process's SIGINT to a thread that does not block it: the shell's main thread, here."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)


@contextmanager
def open_pool(target: DaskTarget | None) -> Iterator[DaskPool | None]:
    """A DaskPool for the compare's runs (None without a target), closed afterwards (a local
    cluster with it). Failures of the cluster itself surface as one-line PrecisionErrors."""
    if target is None:
        yield None
        return
    distributed = _import_distributed()
    _quiet()
    environ = dict(os.environ)  # a local cluster's nanny sets PYTHONHASHSEED in it
    client, cluster = _connect(distributed, target)
    try:
        yield DaskPool(client, target)
    except distributed.KilledWorker as exc:
        raise PrecisionError(
            f"vc: the {target.label} lost the workers of one task several times: {exc}"
        ) from None
    except ModuleNotFoundError as exc:
        raise PrecisionError(
            f"vc: a worker of the {target.label} cannot import {exc.name}: install "
            "precision_shell where the Dask workers run"
        ) from None
    finally:
        _close(client, cluster)
        for name in set(os.environ) - set(environ):
            del os.environ[name]


def _close(client: Any, cluster: Any) -> None:
    with suppress(Exception):  # a client whose scheduler is gone may fail to close
        client.close(timeout=CLOSE_TIMEOUT_S)
    if cluster is not None:
        with suppress(Exception):
            cluster.close(timeout=CLOSE_TIMEOUT_S)
