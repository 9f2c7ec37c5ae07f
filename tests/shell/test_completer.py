"""Tab completion through `Document` + `get_completions`: names, flags, values, paths, speed."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from prompt_toolkit.completion import CompleteEvent, Completion
from prompt_toolkit.document import Document

from precision_shell.shell.completer import NameSource, ShellCompleter
from tests.shell.fake_commands import make_registry

OPS = NameSource(["conv1/Conv2D", "conv2/Conv2D", "res/conv_add", "Relu", "my op/1", "fc/MatMul"])
TENSORS = NameSource(["Conv2D.conv1.1.7.100.npy", "MatMul.fc.2.9.100"])


@pytest.fixture
def completer() -> ShellCompleter:
    return ShellCompleter(
        registry=make_registry(), op_names=lambda: OPS, tensor_names=lambda: TENSORS
    )


def complete(completer: ShellCompleter, text: str) -> list[Completion]:
    return list(completer.get_completions(Document(text, len(text)), CompleteEvent()))


def texts(completer: ShellCompleter, text: str) -> list[str]:
    return [c.text for c in complete(completer, text)]


def test_command_names_and_aliases_by_prefix(completer: ShellCompleter) -> None:
    assert texts(completer, "l") == ["list", "ls"]
    assert texts(completer, "  n") == ["ni"]
    found = complete(completer, "ls")
    assert [(c.text, c.start_position, c.display_meta_text) for c in found] == [
        ("ls", -2, "List the fake ops.")
    ]


def test_exit_words_complete_too(completer: ShellCompleter) -> None:
    assert texts(completer, "q") == ["quit"]
    assert "exit" in texts(completer, "")


def test_flags_of_a_command(completer: ShellCompleter) -> None:
    assert texts(completer, "ls -") == ["-h", "-n", "--name", "-c", "--count", "-a", "--all"]
    found = complete(completer, "ls -a --c")
    assert [(c.text, c.start_position, c.display_meta_text) for c in found] == [
        ("--count", -3, "how many to show")
    ]


def test_flags_of_a_command_with_an_op_positional(completer: ShellCompleter) -> None:
    # The positional completes op names, but a word starting with "-" is a flag.
    assert texts(completer, "ni -") == ["-h", "-g", "--graph", "-a", "--attrs"]
    assert texts(completer, "ni conv1/Conv2D --g") == ["--graph"]


def test_op_names_by_prefix_then_substring(completer: ShellCompleter) -> None:
    assert texts(completer, "ls -n conv") == ["conv1/Conv2D", "conv2/Conv2D", "res/conv_add"]
    # substring search ignores case; prefix matches come first
    assert texts(completer, "ni CONV2") == ["conv1/Conv2D", "conv2/Conv2D"]
    assert texts(completer, "ni Re") == ["Relu", "res/conv_add"]
    found = complete(completer, "ls -n mat")
    assert [(c.text, c.start_position, c.display_meta_text) for c in found] == [
        ("fc/MatMul", -3, "op")
    ]


def test_names_with_spaces_are_quoted_and_replace_the_typed_quote(
    completer: ShellCompleter,
) -> None:
    found = complete(completer, 'ni "my o')
    assert [(c.text, c.start_position, c.display_text) for c in found] == [
        ("'my op/1'", -5, "my op/1")
    ]


def test_positional_vs_flag_value(completer: ShellCompleter) -> None:
    all_ops = ["Relu", "conv1/Conv2D", "conv2/Conv2D", "fc/MatMul", "'my op/1'", "res/conv_add"]
    assert texts(completer, "ni ") == all_ops  # positional: op names
    assert texts(completer, "ni -a ") == all_ops  # -a takes no value
    assert texts(completer, "ni -g ") == []  # value of -g: a graph, no source
    assert texts(completer, "ni -g main ") == all_ops
    assert texts(completer, "ni conv1/Conv2D ") == []  # the one positional is used
    assert texts(completer, "dc -f ") == []
    assert texts(completer, "dc -f NCHW Rel") == ["Relu"]


def test_tensor_values_offer_ops_and_files(completer: ShellCompleter) -> None:
    found = complete(completer, "cp conv1")
    assert [(c.text, c.display_meta_text) for c in found] == [
        ("conv1/Conv2D", "op"),
        ("Conv2D.conv1.1.7.100.npy", "file"),
    ]
    # -n takes two op names: the word after its first value is still a value of -n (ops only);
    # after both, the positional (ops and files) is next
    assert texts(completer, "cp -n a MatM") == ["fc/MatMul"]
    assert texts(completer, "cp -n a b MatM") == ["fc/MatMul", "MatMul.fc.2.9.100"]
    assert texts(completer, "cp -p 3 Mat") == ["fc/MatMul", "MatMul.fc.2.9.100"]


def test_command_names_as_values(completer: ShellCompleter) -> None:
    assert texts(completer, "help d") == ["dc"]  # prefix only, not "bad"
    assert texts(completer, "help ") == sorted(make_registry().all_names())


def test_nothing_for_unknown_or_raw_commands(completer: ShellCompleter) -> None:
    assert texts(completer, "nope -") == []
    assert texts(completer, "raw c") == []


def test_no_source_yet_gives_no_values() -> None:
    completer = ShellCompleter(registry=make_registry())
    assert texts(completer, "ni con") == []


def test_path_completion(completer: ShellCompleter, tmp_path: Path) -> None:
    (tmp_path / "alpha.npy").write_bytes(b"")
    (tmp_path / "alps").mkdir()
    (tmp_path / "beta.npy").write_bytes(b"")
    found = complete(completer, f"dc conv1/Conv2D -o {tmp_path}/al")
    assert [(c.text, c.start_position, c.display_text) for c in found] == [
        ("pha.npy", 0, "alpha.npy"),
        ("ps", 0, "alps/"),
    ]


def test_name_source_prefix_is_case_sensitive_and_limit_holds() -> None:
    source = NameSource([f"op_{i:03d}" for i in range(500)] + ["x/op_00"])
    assert source.matching("op_00", limit=3) == ["op_000", "op_001", "op_002"]
    assert source.matching("OP_00")[:2] == ["op_000", "op_001"]
    assert source.matching("/op_00") == ["x/op_00"]
    assert len(source.matching("op")) == 200
    assert source.matching("") == source.names[:200]


def test_name_source_on_50k_names_is_fast() -> None:
    names = [f"model/block_{i // 100}/unit_{i % 100}/Conv2D_{i}" for i in range(50_000)]
    start = time.perf_counter()
    source = NameSource(names)
    build_ms = (time.perf_counter() - start) * 1e3
    timings = {}
    results = {}
    for query in ("model/block_49", "conv2d_4999", "unit_7/conv2d_4970", "no-such-op"):
        start = time.perf_counter()
        results[query] = source.matching(query)
        timings[query] = (time.perf_counter() - start) * 1e3
    print(
        f"\nNameSource 50k: build {build_ms:.1f} ms; "
        + "; ".join(f"{q!r} {ms:.2f} ms" for q, ms in timings.items())
    )
    assert len(results["model/block_49"]) == 200
    assert results["model/block_49"][0] == "model/block_49/unit_0/Conv2D_4900"
    assert results["conv2d_4999"] == [
        "model/block_49/unit_99/Conv2D_4999",
        *[f"model/block_499/unit_{i % 100}/Conv2D_{i}" for i in range(49990, 50000)],
    ]
    assert results["unit_7/conv2d_4970"] == ["model/block_497/unit_7/Conv2D_49707"]
    assert results["no-such-op"] == []
