"""The newest result dir of `temp/vector_compare/`: its stamp, then the run of that second."""

from __future__ import annotations

from precision_shell.compare.results.schema import find_result_csv, result_subdirs


def test_the_tenth_run_of_a_second_is_newer_than_the_ninth(tmp_path):
    names = ["20260101000000", "20260101000000_9", "20260101000000_10", "20251231235959_11"]
    for name in names:
        (tmp_path / name).mkdir()
        (tmp_path / name / "result_20260101000000.csv").write_text("x\n")
    assert [d.name for d in result_subdirs(tmp_path)] == [
        "20260101000000_10",
        "20260101000000_9",
        "20260101000000",
        "20251231235959_11",
    ]
    assert find_result_csv(tmp_path).parent.name == "20260101000000_10"
