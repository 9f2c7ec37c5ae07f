"""The report in a real headless browser (Debian `chromium`): the inline script sorts the
table by cosine from a `#sort=` link, filters it, and the page renders to a screenshot.

Skipped, with the reason, when chromium is not installed (scripts/test installs it as root)."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from tests.commands.shell_fixture import CONV2, open_shell, run_ok
from tests.report.page_parser import parse_page

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="Debian `chromium` not installed (apt-get install chromium)"
)
_TIMEOUT_S = 60


def _chromium(profile: Path, *args: str) -> str:
    assert CHROMIUM is not None
    done = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=_TIMEOUT_S,
        check=True,
    )
    return done.stdout


@pytest.fixture(scope="module")
def report_page(tiny_demo_shared, tmp_path_factory):
    root, _ = tiny_demo_shared
    check = run_ok(open_shell(root), "ac -c --report")
    return check.report_path, tmp_path_factory.mktemp("chromium_profile")


def test_sorting_by_cosine_puts_the_nan_outputs_then_the_lowest_first(report_page) -> None:
    path, profile = report_page
    dom = parse_page(_chromium(profile, "--dump-dom", f"{path.as_uri()}#sort=CosineSimilarity"))
    assert len(dom.result_rows) == 37
    cos = [h.text for h in dom.result_heads].index("CosineSimilarity")
    assert dom.result_heads[cos].attrs["aria-sort"] == "ascending"
    first = dom.first_row()
    assert (first[0], first[2], first[7], first[cos]) == (
        "8",
        "l2_loss/Sum",
        "l2_loss/Sum:output:0",
        "nan",
    )
    order = [(cells[7], cells[cos]) for _, cells in dom.result_rows]
    # NaN from the data is the worst cosine; then ascending; "NaN" (not computed) last
    assert [c for _, c in order[:3]] == ["nan", "nan", "nan"]
    assert order[3] == (f"{CONV2}:output:0", "0.892658")
    assert order[4] == ("conv3/Conv2Dres/addrelu3/Relu:input:0", "0.892658")
    assert [c for _, c in order[-8:]] == ["NaN"] * 8
    finite = [float(c) for _, c in order[3:-8]]
    assert finite == sorted(finite)


def test_descending_sort_and_a_filter_from_the_link(report_page) -> None:
    path, profile = report_page
    url = f"{path.as_uri()}#sort=-CosineSimilarity&filter=L2_LOSS/"
    dom = parse_page(_chromium(profile, "--dump-dom", url))
    cos = [h.text for h in dom.result_heads].index("CosineSimilarity")
    assert dom.result_heads[cos].attrs["aria-sort"] == "descending"
    shown = [cells for tr, cells in dom.result_rows if "hidden" not in tr.attrs]
    # the l2_loss rows (case-insensitive), highest cosine first, ties in file order, NaN last
    assert [(c[7], c[cos]) for c in shown] == [
        ("l2_loss/scaled:input:0", "0.993784"),
        ("l2_loss/scaled:output:0", "0.993784"),
        ("l2_loss/Square:input:0", "0.993784"),
        ("l2_loss/Square:output:0", "0.991043"),
        ("l2_loss/Sum:input:0", "0.991043"),
        ("l2_loss/Sum:output:0", "nan"),
    ]
    (count,) = [e for e in dom.elements if e.attrs.get("id") == "shown"]
    assert count.text == "6"


def test_screenshot(report_page, tmp_path) -> None:
    path, profile = report_page
    shot = tmp_path / "report.png"
    _chromium(profile, f"--screenshot={shot}", "--window-size=1280,1800", path.as_uri())
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk
    assert (width, height) == (1280, 1800)
    print(f"report screenshot: {shot}")
