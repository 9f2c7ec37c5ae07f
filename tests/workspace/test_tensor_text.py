"""The values text `pt` writes: every value, read back exactly; a big tensor's first ones."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from precision_shell.workspace import tensor_text
from precision_shell.workspace.tensor_text import write_tensor_text


def test_values_read_back_exactly(tmp_path: Path) -> None:
    values = np.array([[1.5, -2.25e-8], [3.0e30, 7.0]], dtype=np.float32)
    path = write_tensor_text(tmp_path / "t.txt", values, {"tensor": "x:output:0"})
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# tensor: x:output:0\n")
    assert np.array_equal(np.loadtxt(path, dtype=np.float32), values.reshape(-1))


def test_a_big_tensor_writes_its_first_values_and_says_so(tmp_path: Path, monkeypatch) -> None:
    """QA Q14: a 900 M-element benchmark made pt write ~20 GB of text for minutes."""
    monkeypatch.setattr(tensor_text, "TEXT_MAX_VALUES", 5)
    values = np.arange(12, dtype=np.int32).reshape(3, 4)
    path = write_tensor_text(tmp_path / "t.txt", values, {"tensor": "y"})
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[:2] == ["# tensor: y", "# values: the first 5 of 12 (dc decodes the whole tensor)"]
    assert [int(v) for v in lines[2:]] == [0, 1, 2, 3, 4]
