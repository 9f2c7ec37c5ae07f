"""Fixtures for harvest tests: specs for the fake tfdbg, and offline run dirs in tfdbg's layout."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

FAKE_TFDBG = str(Path(__file__).with_name("fake_tfdbg.py"))
T0 = 1_600_000_000_000_000
DEVICE_DIR = "_tfdbg_device_,job_localhost,replica_0,task_0,device_CPU_0"


def tensor(name: str, op_type: str, *dumps: tuple[int, object], dtype: str = "float32") -> dict:
    return {
        "name": name,
        "op_type": op_type,
        "dumps": [{"rel_us": rel, "value": value, "dtype": dtype} for rel, value in dumps],
    }


def standard_tensors() -> list[dict]:
    """A matmul/bias/relu chain, a tensor dumped twice, a collision pair and a `..` name."""
    return [
        tensor("dense/MatMul:0", "MatMul", (0, [[1.5, -2.0], [0.25, 4.0]])),
        tensor("dense/BiasAdd:0", "BiasAdd", (1_234, [[2.5, -1.0], [1.25, 5.0]])),
        tensor("dense/Relu:0", "Relu", (2_000, [[2.5, 0.0], [1.25, 5.0]])),
        tensor("loop/mul:0", "Mul", (3_000, [1.0, 2.0]), (4_001, [2.0, 4.0])),
        tensor("a/b:0", "Identity", (5_000, [1, 2]), dtype="int32"),
        tensor("a_b:0", "Identity", (5_000, [3, 4]), dtype="int32"),
        tensor("../x:0", "Identity", (6_500, 7.0)),
    ]


def expected_files(
    tensors: list[dict], t0: int = T0
) -> dict[tuple[str, int], tuple[int, np.ndarray]]:
    """(tensor name, dump index) -> (timestamp, value) of every dump."""
    return {
        (t["name"], k): (t0 + d["rel_us"], np.asarray(d["value"], dtype=d["dtype"]))
        for t in tensors
        for k, d in enumerate(t["dumps"])
    }


def write_spec(path: Path, tensors: list[dict] | None = None, **behaviour: object) -> Path:
    spec = {"t0": T0, "tensors": standard_tensors() if tensors is None else tensors, **behaviour}
    path.write_text(json.dumps(spec), encoding="utf-8")
    return path


def fake_script_argv(spec_path: Path) -> list[str]:
    return [sys.executable, FAKE_TFDBG, str(spec_path)]


def fake_analyzer() -> tuple[str, ...]:
    return (sys.executable, FAKE_TFDBG, "--ui_type=readline")


def make_fake_run_dir(
    run_dir: Path, tensors: list[dict] | None = None, **behaviour: object
) -> Path:
    """A `run_*` dir with tfdbg-named (empty) dump files and the fake analyzer's spec."""
    tensors = standard_tensors() if tensors is None else tensors
    device = run_dir / DEVICE_DIR
    for t in tensors:
        node, slot = t["name"].rsplit(":", 1)
        scopes, _, base = node.rpartition("/")
        directory = device.joinpath(*scopes.split("/")) if scopes else device
        directory.mkdir(parents=True, exist_ok=True)
        for d in t["dumps"]:
            (directory / f"{base}_{slot}_DebugIdentity_{T0 + d['rel_us']}").write_bytes(b"")
    device.mkdir(parents=True, exist_ok=True)
    (device / "_tfdbg_graph_hash42_1").write_bytes(b"")
    write_spec(run_dir / "fake_spec.json", tensors, **behaviour)
    return run_dir


def npy_files(directory: Path) -> list[str]:
    return sorted(name for name in os.listdir(directory) if name.endswith(".npy"))
