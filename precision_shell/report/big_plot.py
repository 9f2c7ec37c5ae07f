"""The accuracy plot of a big result: every output point, drawn by the page's script.

An SVG per point would weigh hundreds of MB for 1M rows. Here the frame, axes, threshold
lines, legend and root-cause marks are the same static SVG the small page draws (plot_svg's
pieces, same geometry), and the points are drawn on a canvas under it from compact arrays:
base64 little-endian float32 x / cosine / second panel, int32 CSV record numbers and one flag
byte per point, decoded by the script. Hovering shows a point's values; a click finds its row
in the table when the page carries it.

The second panel is SQNR in dB (array "sqnr", +inf for identical tensors sent as 3e38), or for
a compare judged by its own tool's rule the `ErrorPanel` metric (array "error": log10 of the
error on a log panel, -inf for a zero error there, as `ErrorPanel.value`); the config's
"second" tells the script which, and what to call it.
"""

from __future__ import annotations

import base64
import json
from html import escape

import numpy as np

from precision_shell.report.data import ReportData
from precision_shell.report.plot_svg import (
    COSINE_BOX,
    FAIL_COLOR,
    HEIGHT,
    PASS_COLOR,
    RULE_FAILS,
    SQNR_BOX,
    WIDTH,
    X_FIRST,
    X_LAST,
    _cosine_frame,
    _legend,
    _root_marks,
    _second_frame,
    second_panel,
)
from precision_shell.report.point_arrays import PointArrays
from precision_shell.report.scale import LinearScale, cosine_domain

# flag bits, as the script reads them; "second": the second panel's value (SQNR or the error)
FAILS, COS_NONFINITE, SECOND_NONFINITE, ROOT, HAS_COS, HAS_SECOND = 1, 2, 4, 8, 16, 32
_TOP = np.float32(3.0e38)  # an infinite SQNR (identical tensors): the top edge


def _b64(array: np.ndarray, dtype: str) -> str:
    return base64.b64encode(np.ascontiguousarray(array, dtype=dtype).tobytes()).decode("ascii")


def _second(data: ReportData, pts: PointArrays) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The second panel's (values, has a value, non-finite in the data) per point."""
    if data.error_panel is None:
        return pts.sqnr, pts.has_sqnr, pts.sqnr_nonfinite
    return pts.error, pts.has_error, pts.error_nonfinite


def encoded_points(data: ReportData) -> dict[str, str]:
    """The point arrays as the script decodes them (see the module doc)."""
    assert data.big is not None
    pts = data.big.points
    second, has_second, second_nonfinite = _second(data, pts)
    flags = (
        pts.fails * FAILS
        + pts.cosine_nonfinite * COS_NONFINITE
        + second_nonfinite * SECOND_NONFINITE
        + pts.root * ROOT
        + pts.has_cosine * HAS_COS
        + has_second * HAS_SECOND
    ).astype(np.uint8)
    line = data.columns.line[pts.rows] if data.columns is not None else np.zeros(len(pts))
    key = second_panel(data.cosine_threshold, data.error_panel).data_panel  # "sqnr" / "error"
    values = np.where(np.isposinf(second), _TOP, second) if data.error_panel is None else second
    return {
        "x": _b64(pts.x, "<f4"),
        "cos": _b64(pts.cosine, "<f4"),
        key: _b64(values, "<f4"),
        "flags": _b64(flags, "u1"),
        "line": _b64(np.clip(line, -(2**31), 2**31 - 1), "<i4"),
    }


def big_plot(data: ReportData) -> str:
    """The plot's figure and script (page.py puts them in the plot section, after its note)."""
    assert data.big is not None and len(data.big.points) > 0
    pts = data.big.points
    panel = data.error_panel
    threshold = data.cosine_threshold
    finite_x = pts.x[np.isfinite(pts.x)]
    x0, x1 = (float(finite_x.min()), float(finite_x.max())) if len(finite_x) else (0.0, 0.0)
    xs = LinearScale(x0, x1, X_FIRST, X_LAST)
    cos = pts.cosine[pts.has_cosine & ~pts.cosine_nonfinite]
    cos_domain = cosine_domain([float(cos.min())] if len(cos) else [], threshold)
    second = second_panel(threshold, panel)
    values, has_value, _ = _second(data, pts)
    shown = values[has_value]
    finite = shown[np.isfinite(shown)]
    extremes = [float(finite.min()), float(finite.max())] if len(finite) else []
    if np.any(np.isneginf(shown)):
        extremes.append(-np.inf)
    db_domain = second.domain(extremes)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="accuracy-plot big" width="{WIDTH}"'
        f' height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif"'
        f' font-size="11" role="img" aria-label="output cosine similarity and {escape(second.name)}'
        ' per op">'
    ]
    parts += _cosine_frame(xs, cos_domain, threshold, data.cosine_line)
    parts += _legend() if panel is None else _legend(RULE_FAILS)
    parts += _second_frame(xs, db_domain, second)
    cause = data.marked_cause
    label = f"root cause: {cause['op']} [{cause.get('index')}]" if cause else None
    root_xs = pts.x[pts.root]
    root_x = float(root_xs[0]) if len(root_xs) else None
    if root_x is None and isinstance(cause.get("index"), int):
        root_x = float(cause["index"])
    parts += _root_marks([], label, xs(root_x) if root_x is not None else None)
    parts.append("</svg>")
    config = {
        "width": WIDTH,
        "height": HEIGHT,
        "x": [x0, x1, X_FIRST, X_LAST],
        "panels": [
            [cos_domain.lo, cos_domain.hi, COSINE_BOX.bottom, COSINE_BOX.top, COSINE_BOX.nan_y],
            [db_domain.lo, db_domain.hi, SQNR_BOX.bottom, SQNR_BOX.top, SQNR_BOX.nan_y],
        ],
        # the second panel: its array, its name in the hover text, the unit after its value,
        # whether the array holds log10 of the values
        "second": {
            "key": second.data_panel,  # the array encoded_points names so
            "label": second.name,
            "unit": " dB" if panel is None else "",
            "log": panel is not None and panel.log,
        },
        "failText": "fails the thresholds" if panel is None else RULE_FAILS,
        "threshold": threshold,
        "colors": [PASS_COLOR, FAIL_COLOR],
        "count": len(pts),
        "nameCol": data.header.index("TensorIndex") if "TensorIndex" in data.header else 0,
        "arrays": encoded_points(data),
    }
    # numbers and base64 only; "<" escaped all the same, so nothing can end the script early
    payload = json.dumps(config, allow_nan=False, separators=(",", ":")).replace("<", "\\u003c")
    failing = int(np.count_nonzero(pts.fails))
    return (
        f'<div class="figure plot big-plot" style="position:relative;width:{WIDTH}px;'
        f'height:{HEIGHT}px"><canvas id="plot-canvas" width="{WIDTH}" height="{HEIGHT}"'
        ' style="position:absolute;left:0;top:0"></canvas>'
        f'<div style="position:absolute;left:0;top:0;pointer-events:none">{"".join(parts)}</div>'
        '<div id="plot-tip" hidden></div></div>'
        f'<p class="muted">Every one of the {len(pts)} plotted outputs is drawn ({failing}'
        " failing, in red, on top). Hover a point for its values; click it to find its row"
        " in the table (when the page carries it).</p>"
        f'<script type="application/json" id="plot-data">{payload}</script>'
        f"<script>{PLOT_SCRIPT}</script>"
    )


PLOT_SCRIPT = """
(function () {
  "use strict";
  var cfg = JSON.parse(document.getElementById("plot-data").textContent);
  function decode(name, Type) {
    var text = atob(cfg.arrays[name]), bytes = new Uint8Array(text.length);
    for (var i = 0; i < text.length; i += 1) bytes[i] = text.charCodeAt(i);
    return new Type(bytes.buffer);
  }
  var xs = decode("x", Float32Array), cos = decode("cos", Float32Array);
  var second = cfg.second, db = decode(second.key, Float32Array);
  var flags = decode("flags", Uint8Array);
  var lines = decode("line", Int32Array), n = cfg.count;
  var canvas = document.getElementById("plot-canvas"), tip = document.getElementById("plot-tip");
  var ratio = window.devicePixelRatio || 1;
  canvas.width = cfg.width * ratio; canvas.height = cfg.height * ratio;
  canvas.style.width = cfg.width + "px"; canvas.style.height = cfg.height + "px";
  var g = canvas.getContext("2d");
  g.scale(ratio, ratio);
  function px(v) {
    var d0 = cfg.x[0], d1 = cfg.x[1];
    return d1 === d0 ? (cfg.x[2] + cfg.x[3]) / 2 : cfg.x[2] + (v - d0) / (d1 - d0) * (cfg.x[3] - cfg.x[2]);
  }
  function py(panel, k) {
    var p = cfg.panels[panel], f = flags[k];
    if (panel === 0) {
      if (!(f & 16)) return null;
      if (f & 2) return p[4];
      return p[2] + (cos[k] - p[0]) / (p[1] - p[0]) * (p[3] - p[2]);
    }
    if (!(f & 32)) return null;
    if (f & 4) return p[4];
    if (db[k] > 1e38) return p[3];
    if (db[k] < -1e38) return p[2];  // a zero error on a log panel: the bottom edge
    return p[2] + (db[k] - p[0]) / (p[1] - p[0]) * (p[3] - p[2]);
  }
  var where = [new Float32Array(n), new Float32Array(n), new Float32Array(n)];
  var drawn = [0, 0];  // points drawn, failing points drawn (read back by the browser test)
  function draw(failing) {
    g.fillStyle = cfg.colors[failing ? 1 : 0]; g.strokeStyle = g.fillStyle;
    for (var k = 0; k < n; k += 1) {
      if (((flags[k] & 1) === 1) !== failing) continue;
      var x = px(xs[k]);
      where[0][k] = x;
      drawn[0] += 1;
      if (failing) drawn[1] += 1;
      for (var panel = 0; panel < 2; panel += 1) {
        var y = py(panel, k);
        where[panel + 1][k] = y === null ? -1e9 : y;
        if (y === null) continue;
        if (flags[k] & (panel === 0 ? 2 : 4)) g.strokeRect(x - 2, y - 2, 4, 4);
        else g.fillRect(x - 1.5, y - 1.5, 3, 3);
        if (flags[k] & 8) { g.beginPath(); g.arc(x, y, 8, 0, 6.2832); g.stroke(); }
      }
    }
  }
  draw(false); draw(true);
  canvas.setAttribute("data-drawn", drawn[0] + " " + drawn[1]);
  var cell = 8, grid = {};
  for (var k = 0; k < n; k += 1) {
    for (var panel = 1; panel < 3; panel += 1) {
      var y = where[panel][k];
      if (y < -1e8) continue;
      var key = Math.floor(where[0][k] / cell) + ":" + Math.floor(y / cell);
      (grid[key] = grid[key] || []).push(k * 2 + panel - 1);
    }
  }
  function nearest(event) {
    var box = canvas.getBoundingClientRect(), mx = event.clientX - box.left;
    var my = event.clientY - box.top, best = null, bestD = 36;
    for (var i = -1; i <= 1; i += 1) for (var j = -1; j <= 1; j += 1) {
      var list = grid[(Math.floor(mx / cell) + i) + ":" + (Math.floor(my / cell) + j)] || [];
      list.forEach(function (code) {
        var k = code >> 1, dx = where[0][k] - mx, dy = where[(code & 1) + 1][k] - my;
        var d = dx * dx + dy * dy;
        if (d <= bestD && (best === null || d < bestD || (flags[k] & 1))) { best = k; bestD = d; }
      });
    }
    return best === null ? null : [best, mx, my];
  }
  function value(v, nonfinite, digits) {  // an infinite value as the CSV prints it
    if (nonfinite) return "nan/inf";
    if (v === Infinity || v === -Infinity) return v > 0 ? "inf" : "-inf";
    return v.toFixed(digits);
  }
  function secondText(k) {  // SQNR in dB to 0.1, or the error itself (10^y on a log panel)
    var f = flags[k], v = db[k];
    if (!(f & 32)) return "not computed";
    if (v > 1e38) return "inf";
    // an SQNR from a distance the data made non-finite: -inf (inf, all noise) or nan
    if (second.key === "sqnr" && (f & 4)) return isNaN(v) ? "nan" : "-inf";
    if (second.key === "sqnr" || (f & 4)) return value(v, f & 4, 1);
    if (second.log) v = v < -1e38 ? 0 : Math.pow(10, v);
    return String(Number(v.toPrecision(4)));
  }
  function withUnit(t) { return t === "not computed" ? t : t + second.unit; }
  function text(k) {
    var f = flags[k], row = document.querySelector('#results tr[data-line="' + lines[k] + '"]');
    var name = row ? row.cells[cfg.nameCol].textContent : "";
    return [
      (name ? name + " · " : "") + "Index " + xs[k] + " · CSV record " + lines[k],
      "cosine " + ((f & 16) ? value(cos[k], f & 2, 6) : "not computed") + " · " +
        second.label + " " + withUnit(secondText(k)),
      (f & 2) ? "NaN/inf in the data" : ((f & 1) ? cfg.failText : "pass"),
      row ? "click: its row in the table" : "not in this page's table: see the CSV"
    ].join("\\n");
  }
  canvas.addEventListener("mousemove", function (event) {
    var hit = nearest(event);
    if (!hit) { tip.hidden = true; return; }
    tip.textContent = text(hit[0]);
    tip.style.cssText = "position:absolute;white-space:pre;background:#fff;border:1px solid #9e9e9e;" +
      "padding:4px 6px;font-size:12px;pointer-events:none;left:" + (hit[1] + 12) + "px;top:" +
      (hit[2] + 12) + "px";
    tip.hidden = false;
  });
  canvas.addEventListener("mouseleave", function () { tip.hidden = true; });
  canvas.addEventListener("click", function (event) {
    var hit = nearest(event);
    if (!hit) return;
    var row = document.querySelector('#results tr[data-line="' + lines[hit[0]] + '"]');
    if (!row) return;
    row.hidden = false;
    row.scrollIntoView({block: "center"});
    row.classList.add("flash");
    setTimeout(function () { row.classList.remove("flash"); }, 1500);
  });
})();
"""
