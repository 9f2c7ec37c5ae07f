"""Integration with the real tfdbg (TensorFlow CPU): `tf_run` live, `tf_dump` fast and pexpect.

A small TF1 graph (matmul, bias, relu, softmax, and a while loop whose `mul` is dumped
twice) runs through `precision_shell.tf_config`; the script also runs the graph in a plain
session and saves every fetchable tensor, so each harvested `.npy` is checked against the
value the session computes directly. Skipped, with the reason, when TensorFlow is absent.
"""

from __future__ import annotations

import os
import random
import shlex
import sys
from pathlib import Path

import numpy as np
import pytest

from precision_shell.formats.benchmark import scan_benchmark_dir
from precision_shell.formats.tfdbg_dir import tensorflow_available
from precision_shell.harvest.offline import harvest_run_fast
from precision_shell.progress import ProgressSink
from tests.commands.shell_fixture import open_shell, run_ok
from tests.harvest.fake_spec import npy_files

pytestmark = pytest.mark.skipif(
    not tensorflow_available(),
    reason="TensorFlow is not installed (pip install tensorflow-cpu): real tfdbg tests skipped",
)

REPO = Path(__file__).resolve().parents[2]

MODEL = r"""
import sys
sys.path.insert(0, REPO)
import numpy as np
import tensorflow as tf
from precision_shell import tf_config

mode, expected_path = sys.argv[1], sys.argv[2]
tf.compat.v1.disable_eager_execution()
tf.compat.v1.disable_control_flow_v2()  # loop ops keep their Python names
graph = tf.Graph()
with graph.as_default():
    x = tf.compat.v1.placeholder(tf.float32, [2, 3], name="x")
    kernel = tf.constant(np.arange(12, dtype=np.float32).reshape(3, 4) / 7, name="dense/kernel")
    bias = tf.constant(np.linspace(-1, 1, 4, dtype=np.float32), name="dense/bias")
    matmul = tf.matmul(x, kernel, name="dense/MatMul")
    biased = tf.nn.bias_add(matmul, bias, name="dense/BiasAdd")
    # a resource variable: its handle (`scale:0`) is dumped too, and holds no numbers
    scale = tf.compat.v1.get_variable("scale", initializer=np.float32(1.5), use_resource=True)
    scaled = tf.multiply(biased, scale, name="dense/scaled")
    relu = tf.nn.relu(scaled, name="dense/Relu")
    init = tf.compat.v1.global_variables_initializer()
    softmax = tf.nn.softmax(relu, name="out/Softmax")
    step0 = tf.constant(0, name="loop/i0")
    _, doubled = tf.while_loop(
        lambda i, a: i < 2,
        lambda i, a: (i + 1, tf.multiply(a, 2.0, name="mul")),
        [step0, softmax],
        name="loop",
    )
feed = {x: np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]], np.float32)}
config = tf_config.benchmark_session_config()

direct = tf.compat.v1.Session(graph=graph, config=config)
direct.run(init)
# Fed placeholders are dumped as their `_arg_*` feed node (checked below), loop ops per step;
# the variable's own ops run at its initialisation, not in the run dumped
fetchable = [
    t
    for op in graph.get_operations()
    if op.type != "Placeholder" and not op.name.startswith(("loop/", "scale", "init"))
    for t in op.outputs
    if t.dtype != tf.resource
]
values = direct.run(fetchable + [doubled], feed)
names = [t.name for t in fetchable] + ["loop/Exit_1:0", "_arg_x_0_0:0"]
values.append(feed[x])
np.savez(expected_path, names=np.array(names), **{f"v{i}": v for i, v in enumerate(values)})

sess = tf.compat.v1.Session(graph=graph, config=config)
sess.run(init)
wrapped = tf_config.sess_dump_live(sess) if mode == "live" else tf_config.sess_dump(sess)
wrapped.run(doubled, feed)
print("done")
"""


@pytest.fixture
def model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # tfdbg writes ~/.tfdbg_config
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "3")
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "0")
    (tmp_path / "home").mkdir()
    path = tmp_path / "model.py"
    path.write_text(MODEL.replace("REPO", repr(str(REPO)), 1), encoding="utf-8")
    return path


def _expected(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        names = [str(n) for n in data["names"]]
        return {name: data[f"v{i}"] for i, name in enumerate(names)}


def _check_against_direct_values(dump: Path, expected: dict[str, np.ndarray]) -> int:
    """Every harvested tensor the session can compute directly equals that value."""
    index = scan_benchmark_dir(dump)
    assert index.warnings == []
    checked = 0
    for name, value in expected.items():
        op, slot = name.rsplit(":", 1)
        benchmark = index.lookup(op, int(slot))
        assert benchmark is not None, f"{name} was not harvested"
        harvested = np.load(benchmark.path, allow_pickle=False)
        assert harvested.dtype == value.dtype and np.array_equal(harvested, value), name
        checked += 1
    # The loop's mul ran twice: dump 0 is softmax*2, dump 1 softmax*4 (the loop's result).
    muls = index.all["loop_mul.0"]
    assert len(muls) == 2 and muls[0].timestamp < muls[1].timestamp
    softmax = expected["out/Softmax:0"]
    assert np.array_equal(np.load(muls[0].path), softmax * np.float32(2))
    assert np.array_equal(np.load(muls[1].path), expected["loop/Exit_1:0"])
    return checked + 2


def test_tf_run_harvests_a_live_tfdbg_session(tmp_path: Path, model: Path) -> None:
    shell = open_shell(tmp_path)
    expected_path = tmp_path / "expected.npz"
    cmd = shlex.join([sys.executable, str(model), "live", str(expected_path)])
    report = run_ok(shell, f"tf_run --startup-timeout 120 --timeout 60 {cmd}")

    dump = tmp_path / "precision_data" / "tf" / "dump"
    assert report.missed == [] and report.with_values == len(report.saved) == len(npy_files(dump))
    # the variable's handle is no failure: no numbers to save (its value is a ReadVariableOp's)
    assert [m.tensor_name for m in report.no_values] == ["scale:0"]
    assert report.total == len(report.saved) + 1 and report.error_message is None
    assert not report.timestamps_estimated  # t0 came from the live dump root
    assert report.child_status == "exit status 0"  # the script had no further run()
    expected = _expected(expected_path)
    assert _check_against_direct_values(dump, expected) == len(expected) + 2
    assert (tmp_path / "home" / ".tfdbg_config").is_file()  # tfdbg's config went to our HOME


def test_tf_dump_fast_path_and_pexpect_path_write_identical_files(
    tmp_path: Path, model: Path
) -> None:
    shell = open_shell(tmp_path)
    expected_path = tmp_path / "expected.npz"
    cmd = shlex.join([sys.executable, str(model), "offline", str(expected_path)])
    batch = run_ok(shell, f"tf_dump {cmd}")
    [fast] = batch.reports
    assert fast.mode == "offline" and fast.missed == [] and fast.with_values == len(fast.saved)
    assert [(m.tensor_name, m.reason) for m in fast.no_values] == [
        ("scale:0", "a resource tensor, not numbers")
    ]
    dump = tmp_path / "precision_data" / "tf" / "dump"
    _check_against_direct_values(dump, _expected(expected_path))

    batch = run_ok(shell, "tf_dump --pexpect --all --startup-timeout 120 --timeout 60")
    [slow] = batch.reports
    run_dir = Path(slow.source)
    assert slow.mode == "offline-pexpect" and slow.missed == []
    assert [m.tensor_name for m in slow.no_values] == ["scale:0"]
    assert slow.child_status == "exit status 0"
    slow_dump = dump / run_dir.name
    # Same names (so the same real timestamps: t0 + lt time == DebugDumpDir's) and values.
    assert npy_files(slow_dump) == npy_files(dump)
    for name in npy_files(dump):
        fast_value, slow_value = np.load(dump / name), np.load(slow_dump / name)
        assert fast_value.dtype == slow_value.dtype and np.array_equal(fast_value, slow_value)
    stamps = {s.timestamp for s in fast.saved}
    assert {s.timestamp for s in slow.saved} == stamps

    # A second fast harvest of the same run keeps every file and writes fresh names.
    again = run_ok(shell, "tf_dump").reports[0]
    assert all(s.fresh_name for s in again.saved) and len(again.saved) == len(fast.saved)
    assert len(npy_files(dump)) == 2 * len(fast.saved)

    # Ctrl-C in the fast path: what was written stays, the rest is listed.
    def interrupt_after_three(tick: object, seen: list[int] = []) -> None:  # noqa: B006
        seen.append(1)
        if len(seen) == 3:
            raise KeyboardInterrupt

    stopped = harvest_run_fast(
        run_dir, tmp_path / "stopped", progress=ProgressSink(advance=interrupt_after_three)
    )
    assert stopped.aborted == "interrupted" and len(stopped.saved) == 3
    assert len(npy_files(tmp_path / "stopped")) == 3
    assert len(stopped.missed) + len(stopped.no_values) == fast.total - 3
    assert {m.reason for m in stopped.missed} == {"not harvested: interrupted"}


def test_tf_config_hooks_and_seeds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tensorflow as tf
    from tensorflow.python import debug as tf_debug

    from precision_shell import tf_config

    monkeypatch.setenv(tf_config.WORKSPACE_ENV, str(tmp_path))
    assert isinstance(tf_config.estimator_dump_live(), tf_debug.LocalCLIDebugHook)
    # precision_tool's names mean what they mean there: the offline DumpingDebugHook
    assert isinstance(tf_config.estimator_dump(), tf_debug.DumpingDebugHook)
    assert tf_config.estimator_dump_offline is tf_config.estimator_dump
    assert (tmp_path / "tf" / "tf_debug").is_dir()
    session = tf.compat.v1.Session(graph=tf.Graph())
    assert isinstance(tf_config.sess_dump(session), tf_debug.DumpingDebugWrapperSession)
    assert isinstance(tf_config.sess_dump_live(session), tf_debug.LocalCLIDebugWrapperSession)
    session.close()
    config = tf_config.benchmark_session_config()
    assert config.graph_options.rewrite_options.disable_meta_optimizer
    assert config.graph_options.optimizer_options.opt_level == -1  # L0

    monkeypatch.setenv("PYTHONHASHSEED", "x")
    monkeypatch.setenv("TF_DETERMINISTIC_OPS", "0")
    tf_config.seed_everything(7)
    first = (random.random(), np.random.rand())
    tf_config.seed_everything(7)
    assert (random.random(), np.random.rand()) == first
    assert os.environ["PYTHONHASHSEED"] == "7" and os.environ["TF_DETERMINISTIC_OPS"] == "1"


def test_sess_dump_lets_a_failed_run_raise_and_marks_its_dump(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """QA: tfdbg's DumpingDebugWrapperSession returns a run's OpError instead of raising it,
    the script went on, and tf_dump took the run's partial dumps for a whole run."""
    import tensorflow as tf

    from precision_shell import tf_config
    from precision_shell.formats.tfdbg_dir import list_run_dirs, run_failure

    monkeypatch.setenv(tf_config.WORKSPACE_ENV, str(tmp_path))
    with tf.Graph().as_default() as graph:
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        checked = tf.debugging.check_numerics(tf.math.log(x), "boom")
    session = tf_config.sess_dump(tf.compat.v1.Session(graph=graph))
    assert session.run(checked, feed_dict={x: [1.0, 2.0]}).shape == (2,)
    with pytest.raises(tf.errors.InvalidArgumentError):
        session.run(checked, feed_dict={x: [1.0, -1.0]})
    session.close()
    good, bad = list_run_dirs(tmp_path / "tf" / "tf_debug")
    assert run_failure(good) is None
    assert run_failure(bad).startswith("the run raised InvalidArgumentError: ")
    assert run_failure(bad).endswith(f"({bad.name}.failed)")


def test_a_run_cut_short_is_no_whole_run_whichever_wrapper_dumped_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """QA: a run stopped by tf_dump's own timeout (no exception in the script), or one that
    raised under `estimator_dump`'s hook (after_run never comes), was harvested as whole."""
    import tensorflow as tf

    from precision_shell import tf_config
    from precision_shell.formats.tfdbg_dir import list_run_dirs, run_failure

    monkeypatch.setenv(tf_config.WORKSPACE_ENV, str(tmp_path))
    with tf.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        checked = tf.debugging.check_numerics(tf.math.log(x), "boom")
        hook = tf_config.estimator_dump()
        with tf.compat.v1.train.MonitoredSession(hooks=[hook]) as session:
            session.run(checked, feed_dict={x: [1.0, 2.0]})
            with pytest.raises(tf.errors.InvalidArgumentError):
                session.run(checked, feed_dict={x: [1.0, -1.0]})
    runs = list_run_dirs(tmp_path / "tf" / "tf_debug")
    assert run_failure(runs[0]) is None
    assert run_failure(runs[-1]) == (
        "the run did not finish: the script was stopped or killed as it dumped, or runs still "
        f"({tf_config.RUN_IN_PROGRESS} is left)"
    )
    # without the mark (a run that ended), nothing says it is not whole
    (tmp_path / "tf" / "tf_debug" / tf_config.RUN_IN_PROGRESS).unlink()
    assert run_failure(runs[-1]) is None
