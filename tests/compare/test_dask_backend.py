"""vc on a Dask cluster: the rows of the local backends, killed workers and a lost scheduler."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from precision_shell.compare import runner as compare_runner
from precision_shell.compare.pipeline.dask_backend import (
    INSTALL_HINT,
    DaskTarget,
    open_pool,
)
from precision_shell.compare.pipeline.engine import run_tasks
from precision_shell.compare.pipeline.plan import FileTask
from precision_shell.compare.pipeline.worker import CompareOptions, FileResult
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.errors import PrecisionError
from precision_shell.progress import ProgressSink, Tick
from tests.commands.shell_fixture import open_shell, run_fail, run_ok
from tests.compare import dask_work

pytest.importorskip("distributed")

REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _csvs(out_dir: Path) -> dict[str, bytes]:
    """The result CSVs by name with the dir's stamp taken out, so two runs can be compared."""
    return {re.sub(r"\d{14}", "TS", p.name): p.read_bytes() for p in out_dir.glob("*.csv")}


def _summary(out_dir: Path) -> dict:
    """summary.json without what differs between two runs of one compare (time, paths)."""

    def strip(node):
        if isinstance(node, dict):
            return {
                k: strip(v)
                for k, v in node.items()
                if k not in ("created", "started_ns", "elapsed_s", "csv")
            }
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return strip(json.loads((out_dir / "summary.json").read_text(encoding="utf-8")))


def test_a_local_cluster_writes_the_rows_the_thread_pool_writes(tiny_demo_shared, tmp_path):
    root, _ = tiny_demo_shared
    shell = open_shell(root)
    threads = run_ok(shell, f"vc --backend threads -o {tmp_path / 'threads'}")
    dask = run_ok(shell, f"vc --cluster local:2 -o {tmp_path / 'dask'}")
    assert dask.secondary is not None  # the device-vs-device compare ran on the cluster too
    assert dask.primary.files_done == threads.primary.files_done > 0
    got, want = _csvs(dask.out_dir), _csvs(threads.out_dir)
    assert len(want) == 2 and got == want
    assert _summary(dask.out_dir) == _summary(threads.out_dir)
    assert not dask.summary.primary.interrupted


def test_rows_come_back_in_task_order_from_two_worker_processes(tmp_path):
    tasks = [FileTask(i, i, f"op{i}", "Relu", str(tmp_path), (), ()) for i in range(16)]
    with open_pool(DaskTarget(local_workers=2)) as pool:
        assert pool is not None and pool.worker_count() == 2
        results = list(run_tasks(tasks, CompareOptions(), pool=pool, work=dask_work.slow_work))
        pids = set(pool.client.run(os.getpid).values())
    assert [r.seq for r in results] == list(range(16))
    assert {r.bytes_read for r in results} == pids  # both workers computed some


def test_a_worker_killed_mid_compare_loses_no_row_and_repeats_none(tmp_path):
    n = 24
    tasks = [FileTask(i, i, f"op{i}", "Relu", str(tmp_path), (), ()) for i in range(n)]
    killed: dict[str, object] = {}
    with open_pool(DaskTarget(local_workers=2)) as pool:
        assert pool is not None
        client = pool.client
        pids = client.run(os.getpid)

        def kill_a_busy_worker(result: FileResult) -> None:
            if killed:
                return
            busy = {addr: keys for addr, keys in client.processing().items() if keys}
            assert busy, "both workers idle: nothing in flight to lose"
            addr = sorted(busy)[0]
            killed.update(pid=pids[addr], keys=len(busy[addr]), after=result.seq)
            os.kill(pids[addr], signal.SIGKILL)

        results = list(
            run_tasks(
                tasks,
                CompareOptions(),
                pool=pool,
                work=dask_work.slow_work,
                on_result=kill_a_busy_worker,
            )
        )
    assert killed and killed["keys"] >= 1
    # every task's result once, in order; none from the killed worker after it died
    assert [r.seq for r in results] == list(range(n))
    assert all(r.bytes_read != killed["pid"] for r in results[killed["after"] + 8 :])
    # the task the killed worker was running was started again elsewhere
    starts = Counter(int(p.name.split(".")[0]) for p in tmp_path.iterdir())
    assert set(starts) == set(range(n)) and max(starts.values()) >= 2
    rerun = [seq for seq, count in starts.items() if count >= 2]
    assert all(Path(tmp_path, f"{seq}.{killed['pid']}").exists() for seq in rerun)


def _start(args: list[str], log: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen(
        [sys.executable, "-m", *args],
        stdout=subprocess.DEVNULL,
        stderr=log.open("wb"),
        env=env,
        start_new_session=True,  # its own group: killed whole in `finally`
    )


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


@pytest.fixture
def scheduler_and_worker(tmp_path) -> Iterator[tuple[str, subprocess.Popen]]:
    """A `dask scheduler` and one one-thread `dask worker` in their own processes."""
    address = f"tcp://127.0.0.1:{_free_port()}"
    scheduler = _start(
        ["distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":")[-1],
         "--no-dashboard"],
        tmp_path / "scheduler.log",
    )  # fmt: skip
    worker = None
    try:
        worker = _start(
            ["distributed.cli.dask_worker", address, "--nthreads", "1", "--no-nanny",
             "--no-dashboard", "--death-timeout", "20"],
            tmp_path / "worker.log",
        )  # fmt: skip
        yield address, scheduler
    finally:
        for proc in (worker, scheduler):
            if proc is not None:
                _stop(proc)


def _kill_on_first_row(processes: list[subprocess.Popen]) -> ProgressSink:
    """A progress sink that kills `processes` (the scheduler, or every worker) when the
    compare's first row arrives."""

    def advance(tick: Tick) -> None:
        for proc in processes:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)

    return ProgressSink(advance=advance)


def test_a_scheduler_that_goes_away_mid_compare_gives_one_line_and_a_partial_summary(
    tiny_demo, scheduler_and_worker, tmp_path
):
    root, _ = tiny_demo
    address, scheduler = scheduler_and_worker
    shell = open_shell(root)
    out = tmp_path / "out"
    request = compare_runner.CompareRequest(
        rule=ThresholdRule.default(), output=out, dask=DaskTarget(scheduler=address)
    )
    start = time.monotonic()
    with pytest.raises(PrecisionError) as caught:
        compare_runner.run(
            shell.context.workspace, request, lambda title: _kill_on_first_row([scheduler])
        )
    assert time.monotonic() - start < 60  # never a hang (the reconnect gives up after 5 s)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"vc: lost the Dask scheduler {address} mid-compare (partial: ")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    primary = summary  # the primary compare's record is the summary's top level
    assert primary["partial"] is True and 1 <= primary["files_done"] < primary["files_total"]
    # the rows written are those of the files done, in order
    with open(out / Path(primary["csv"]).name, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert len(rows) - 1 == primary["rows"] > 0


def test_an_unreachable_scheduler_is_one_line_within_10_s(tiny_demo_shared):
    root, _ = tiny_demo_shared
    shell = open_shell(root)
    before = set((root / "precision_data" / "temp").rglob("*"))
    address = f"tcp://127.0.0.1:{_free_port()}"  # nothing listens there
    start = time.monotonic()
    outcome = run_fail(shell, f"vc --scheduler {address}")
    assert time.monotonic() - start < 10
    assert outcome.error.startswith(f"vc: cannot reach the Dask scheduler {address}: ")
    assert set((root / "precision_data" / "temp").rglob("*")) == before  # no empty result dir


def test_the_scheduler_setting_sends_vc_to_it_and_a_local_flag_overrides_it(tiny_demo_shared):
    root, _ = tiny_demo_shared
    shell = open_shell(root)
    address = f"tcp://127.0.0.1:{_free_port()}"
    shell.context.settings.override("parallelism.scheduler", address)
    assert address in run_fail(shell, "vc --max 1").error
    assert run_ok(shell, "vc --max 1 --backend threads").primary.files_done == 1


def test_without_distributed_the_flags_say_how_to_install_it(tiny_demo_shared, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # `import distributed` fails
    shell = open_shell(tiny_demo_shared[0])
    for line in ("vc --cluster local:2", "vc --scheduler tcp://127.0.0.1:1"):
        assert INSTALL_HINT in run_fail(shell, line).error


@pytest.mark.parametrize(
    "line, error",
    [
        ("vc --cluster remote", "vc: --cluster remote: give local or local:N (N workers)"),
        ("vc --cluster local:0", "vc: --cluster local:0: give local or local:N (N workers)"),
        ("vc --cluster local --scheduler tcp://h:1", "vc: give --scheduler or --cluster, not both"),
        ("vc --cluster local -j 2", "vc: --backend and -j are for local pools; drop them with "
         "a Dask cluster"),
    ],
)  # fmt: skip
def test_bad_cluster_flags_are_one_line(tiny_demo_shared, line, error):
    assert run_fail(open_shell(tiny_demo_shared[0]), line).error == error


def test_local_cluster_defaults_to_one_worker_per_core():
    assert DaskTarget.from_cluster("local") == DaskTarget(local_workers=os.cpu_count() or 1)
    assert DaskTarget.from_cluster("local:3").label == "local Dask cluster (3 workers)"


def test_help_vc_lists_the_cluster_flags(tiny_demo_shared):
    text = run_ok(open_shell(tiny_demo_shared[0]), "help vc").text
    assert "--scheduler tcp://HOST:PORT" in text and "--cluster local[:N]" in text


def test_the_shell_does_not_import_distributed_until_a_cluster_is_asked_for():
    code = "import sys, precision_shell.commands; print('distributed' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.fixture
def scheduler_and_workers(tmp_path) -> Iterator[tuple[str, list[subprocess.Popen]]]:
    """A `dask scheduler` and two one-thread `dask worker`s without a nanny (a killed worker
    never comes back), each in its own process."""
    address = f"tcp://127.0.0.1:{_free_port()}"
    scheduler = _start(
        ["distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":")[-1],
         "--no-dashboard"],
        tmp_path / "scheduler.log",
    )  # fmt: skip
    workers: list[subprocess.Popen] = []
    try:
        for n in range(2):
            workers.append(
                _start(
                    [
                        "distributed.cli.dask_worker",
                        address,
                        "--nthreads",
                        "1",
                        "--no-nanny",
                        "--no-dashboard",
                        "--death-timeout",
                        "20",
                    ],
                    tmp_path / f"worker{n}.log",
                )  # fmt: skip
            )
        yield address, workers
    finally:
        for proc in (*workers, scheduler):
            _stop(proc)


def test_a_cluster_whose_workers_all_die_stops_after_the_wait_with_a_partial_summary(
    tiny_demo, scheduler_and_workers, tmp_path
):
    root, _ = tiny_demo
    address, workers = scheduler_and_workers
    shell = open_shell(root)
    out = tmp_path / "out"
    target = DaskTarget(scheduler=address, no_worker_wait_s=1.0)
    request = compare_runner.CompareRequest(rule=ThresholdRule.default(), output=out, dask=target)
    with open_pool(target) as pool:  # both workers up before the compare starts
        assert pool is not None
        pool.client.wait_for_workers(2, timeout=60)
    outcome: dict[str, BaseException | object] = {}

    def compare() -> None:
        try:
            outcome["result"] = compare_runner.run(
                shell.context.workspace, request, lambda title: _kill_on_first_row(workers)
            )
        except BaseException as exc:  # noqa: BLE001 - checked below
            outcome["error"] = exc

    thread = threading.Thread(target=compare, daemon=True)  # a hang must not hold pytest up
    thread.start()
    thread.join(timeout=120)
    assert not thread.is_alive(), "the compare hung with no worker left"
    error = outcome.get("error")
    assert isinstance(error, PrecisionError), outcome
    message = str(error)
    assert "\n" not in message
    assert message.startswith(
        f"vc: the Dask scheduler {address} has no workers left (none for 1 s) (partial: "
    )
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    # the cut falls in the primary compare, or, when its results all came back before the
    # first was taken (up to 2,048 may wait), in the device-vs-device one after it
    cut = summary if summary["partial"] else summary["device_compare"]
    assert cut["partial"] is True and cut["files_done"] < cut["files_total"]
    assert summary["files_done"] >= 1
    if cut is summary:
        assert f"(partial: {summary['files_done']} of " in message
    # the rows written are those of the files done: their rows, in task order
    with open(out / Path(summary["csv"]).name, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))[1:]
    assert len(rows) == summary["rows"] > 0
    files_rows = _rows_per_file(shell, summary["files_done"])
    assert [r[7] for r in rows] == files_rows


def _rows_per_file(shell: Any, files: int) -> list[str]:
    """The TensorIndex cells of the first `files` files' rows, as a local compare writes them."""
    request = compare_runner.CompareRequest(
        rule=ThresholdRule.default(), max_files=files, backend="threads"
    )
    result = compare_runner.run(shell.context.workspace, request)
    with open(result.primary.csv_path, newline="", encoding="utf-8") as fh:
        return [r[7] for r in list(csv.reader(fh))[1:]]


def test_the_no_worker_wait_comes_from_the_settings_and_must_be_positive(
    tiny_demo_shared, monkeypatch
):
    shell = open_shell(tiny_demo_shared[0])
    seen: list[DaskTarget] = []

    def no_pool(target: DaskTarget | None) -> Any:
        if target is None:  # a local pool
            return open_pool(None)
        seen.append(target)
        raise PrecisionError("vc: stop here")

    monkeypatch.setattr(compare_runner, "open_pool", no_pool)
    shell.context.settings.override("parallelism.no_worker_wait_s", 2.5)
    assert run_fail(shell, "vc --scheduler tcp://127.0.0.1:1").error == "vc: stop here"
    assert seen == [DaskTarget(scheduler="tcp://127.0.0.1:1", no_worker_wait_s=2.5)]
    shell.context.settings.override("parallelism.no_worker_wait_s", 0.0)
    error = run_fail(shell, "vc --cluster local:1").error
    assert error == "vc: parallelism.no_worker_wait_s must be above 0 seconds, not 0"
    assert run_ok(shell, "vc --max 1 --backend threads").primary.files_done == 1  # local: unused


def _ignores_sigint(pid: int, field: str = "SigIgn") -> bool:
    """SIGINT is in the process's ignored set (`field`: or its main thread's blocked set,
    SigBlk)."""
    status = Path(f"/proc/{pid}/status").read_text()
    bits = int(next(ln for ln in status.splitlines() if ln.startswith(f"{field}:")).split()[1], 16)
    return bool(bits & (1 << (signal.SIGINT - 1)))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_on_a_local_cluster_is_an_interrupt_and_its_workers_ignore_it(
    tiny_demo_shared, tmp_path, capfd
):
    """The terminal sends Ctrl-C's SIGINT to every process of its foreground group: the local
    cluster's workers too. They ignore it (the shell stops the compare and closes them): no
    traceback from them, and the compare says it was interrupted, not that it lost them."""
    from tests.process_tree import alive, descendants

    root, _ = tiny_demo_shared
    shell = open_shell(root)
    request = compare_runner.CompareRequest(
        rule=ThresholdRule.default(), output=tmp_path / "out", dask=DaskTarget(local_workers=2)
    )
    workers: dict[int, int] = {}
    ticks = []

    def advance(tick: Tick) -> None:
        ticks.append(tick)
        if len(ticks) == 3:
            below = descendants(os.getpid())
            cmdlines = {pid: Path(f"/proc/{pid}/cmdline").read_bytes() for pid in below}
            workers.update({p: below[p] for p, cmd in cmdlines.items() if b"spawn_main" in cmd})
            assert len(workers) == 2 and all(_ignores_sigint(pid) for pid in workers)
            for pid in workers:  # what the terminal does, to the workers and to the shell
                os.kill(pid, signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)

    capfd.readouterr()
    result = compare_runner.run(
        shell.context.workspace, request, lambda title: ProgressSink(advance=advance)
    )
    assert result.error_message == (
        "vc: interrupted (partial: 3 of 14 files); the rows written so far are kept"
    )
    assert result.summary.totals()["partial"] is True
    assert "Traceback" not in capfd.readouterr().err
    # the shell's own Ctrl-C is back to raising KeyboardInterrupt
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    deadline = time.monotonic() + 30
    while any(alive(pid, start) for pid, start in workers.items()):
        assert time.monotonic() < deadline, "a worker outlived the closed cluster"
        time.sleep(0.2)


def _worker_pids(pool: Any) -> dict[str, int]:
    """Worker address -> pid, of the workers the scheduler knows now."""
    return {addr: int(pid) for addr, pid in pool.client.run(os.getpid).items()}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_worker_its_nanny_restarts_ignores_ctrl_c_too():
    """The nanny restarts a killed worker later, when the shell takes Ctrl-C again: the new
    worker must ignore it as the first ones do, and none may outlive the closed cluster."""
    from tests.process_tree import alive, descendants

    with open_pool(DaskTarget(local_workers=2)) as pool:
        assert pool is not None
        # the shell takes Ctrl-C again once the cluster is up
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        before = _worker_pids(pool)
        assert len(before) == 2 and all(_ignores_sigint(pid) for pid in before.values())
        killed = sorted(before.values())[0]
        os.kill(killed, signal.SIGKILL)
        # the worker spawned in its place blocks SIGINT from its first instant (its imports
        # take a second or so before the preload ignores it): watched as soon as it appears
        deadline = time.monotonic() + 60
        born: dict[int, bool] = {}
        while not born:
            assert time.monotonic() < deadline, "the nanny did not spawn a new worker"
            below = descendants(os.getpid())
            for pid in set(below) - set(before.values()):
                try:
                    if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes():
                        born[pid] = _ignores_sigint(pid, "SigBlk") or _ignores_sigint(pid)
                except OSError:
                    continue  # gone again
            time.sleep(0.005)
        assert all(born.values())
        # the shell's own thread still takes Ctrl-C
        assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, set())
        while True:
            assert time.monotonic() < deadline, "the nanny did not restart the killed worker"
            time.sleep(0.2)
            try:
                now = _worker_pids(pool)
            except Exception:  # noqa: BLE001 - the dead worker's address, not yet dropped
                continue
            restarted = set(now.values()) - set(before.values())
            if len(now) == 2 and restarted:
                break
        (new,) = restarted
        assert _ignores_sigint(new)
        below = descendants(os.getpid())
        assert new in below
    deadline = time.monotonic() + 30
    while alive(new, below[new]) or any(
        alive(pid, below[pid]) for pid in before.values() if pid in below
    ):
        assert time.monotonic() < deadline, "a worker outlived the closed cluster"
        time.sleep(0.2)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_workers_of_a_users_cluster_keep_their_ctrl_c(scheduler_and_worker):
    """Only our local cluster's workers are made to ignore Ctrl-C; a user's are not ours."""
    address, _ = scheduler_and_worker
    with open_pool(DaskTarget(scheduler=address)) as pool:
        assert pool is not None
        (pid,) = _worker_pids(pool).values()
        assert not _ignores_sigint(pid)
