import pytest

from precision_shell.errors import PrecisionError
from precision_shell.workspace.layout import discover, newest_numbered_dir, resolve_workspace_root


def test_newest_dir_is_numeric_not_string_order(tmp_path):
    for name in ("9", "10", "20220101", "abc123", "2022x"):
        (tmp_path / name).mkdir()
    (tmp_path / "99999999999").write_text("a file, not a dir")
    assert newest_numbered_dir(tmp_path, []).name == "20220101"
    assert newest_numbered_dir(tmp_path / "missing", []) is None


def test_root_accepts_parent_or_precision_data_itself(tmp_path):
    (tmp_path / "precision_data").mkdir()
    assert resolve_workspace_root(tmp_path) == (tmp_path / "precision_data").resolve()
    assert (
        resolve_workspace_root(tmp_path / "precision_data")
        == (tmp_path / "precision_data").resolve()
    )


def test_root_errors_name_the_path(tmp_path):
    with pytest.raises(PrecisionError, match="no such directory"):
        resolve_workspace_root(tmp_path / "missing")
    with pytest.raises(PrecisionError, match=r"no precision_data/ here"):
        resolve_workspace_root(tmp_path)


def test_discover_finds_runs_graphs_and_newest_dump(tmp_path):
    root = tmp_path / "precision_data"
    for run in ("debug_0", "debug_1", "debug_x"):
        (root / "npu" / run / "graph").mkdir(parents=True)
    (root / "npu" / "debug_0" / "graph" / "ge_proto_00000002_Build.txt").write_text("")
    (root / "npu" / "debug_0" / "graph" / "ge_proto_00000001_Build.txt").write_text("")
    (root / "npu" / "debug_0" / "graph" / "ge_proto_00000003_PreRunBegin.txt").write_text("")
    for ts in ("20220101000000", "20230101000000"):
        (root / "npu" / "debug_0" / "dump" / ts / "0" / "g1" / "1" / "0").mkdir(parents=True)
    (root / "tf" / "dump").mkdir(parents=True)
    (root / "fusion").mkdir()
    (root / "fusion" / "fusion_result.json").write_text("{}")
    layout = discover(tmp_path)
    assert [r.name for r in layout.runs] == ["debug_0", "debug_1"]
    run0 = layout.runs[0]
    assert run0.dump_dir.name == "20230101000000"
    assert [g.number for g in run0.build_graphs] == [1, 2]
    # every dump session is walked, oldest first (the newest file of an op wins later)
    assert [
        (d.path.parents[3].name, d.graph_name, d.device_id, d.model_id, d.step)
        for d in run0.graph_dump_dirs
    ] == [("20220101000000", "g1", "0", "1", "0"), ("20230101000000", "g1", "0", "1", "0")]
    assert layout.benchmark_dir == root.resolve() / "tf" / "dump"
    assert layout.fusion_json is not None and layout.overflow_dir is None
    assert any("debug_1" in w and "no dump" in w for w in layout.warnings)
