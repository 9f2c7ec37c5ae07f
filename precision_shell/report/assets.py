"""The report page's inline style sheet and script (no CDN, no network: the page is one file).

The script sorts the results table by a clicked header (numbers as numbers; `nan` from the
data counts as the worst value, a `NaN` that was not computed always sorts last), filters it
by text and by "failing outputs only", and follows deep links: `#sort=CosineSimilarity`
(ascending), `#sort=-CosineSimilarity` (descending), `&filter=TEXT`. A click on a plot point
scrolls to its table row.
"""

from __future__ import annotations

STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 24px 48px;
  color: #212121; }
h1 { font-size: 22px; margin: 20px 0 4px; }
h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #e0e0e0; padding-bottom: 4px; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; margin: 8px 0; }
dl.facts dt { font-weight: 600; } dl.facts dd { margin: 0; word-break: break-all; }
.muted { color: #757575; } .bad { color: #c62828; font-weight: 600; } .good { color: #2e7d32; }
.warn { color: #8d6e00; font-weight: 600; }
.note { background: #fff8e1; border-left: 4px solid #ffb300; padding: 6px 10px; }
.panel { border: 1px solid #e0e0e0; border-left: 4px solid #b00020; padding: 8px 14px;
  border-radius: 4px; }
.figure { overflow: auto; border: 1px solid #eeeeee; padding: 4px; }
.plot circle.pt { cursor: pointer; }
table { border-collapse: collapse; font-size: 12px; }
th, td { border: 1px solid #e0e0e0; padding: 2px 6px; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
#results thead th { position: sticky; top: 0; background: #f5f5f5; cursor: pointer;
  white-space: nowrap; }
#results th[aria-sort=ascending]::after { content: " \\25B2"; }
#results th[aria-sort=descending]::after { content: " \\25BC"; }
#results td.name { max-width: 360px; overflow-wrap: anywhere; }
tr.fail td { background: #ffebee; } tr.rc td { box-shadow: inset 0 2px 0 #b00020; }
tr.flash td { background: #fff59d; }
.controls { margin: 6px 0; display: flex; gap: 16px; align-items: center; }
.controls input[type=search] { width: 320px; padding: 3px 6px; }
pre.gv { background: #fafafa; border: 1px solid #eeeeee; padding: 8px; overflow: auto; }
"""

SCRIPT = """
(function () {
  "use strict";
  var table = document.getElementById("results");
  if (!table) return;
  var body = table.tBodies[0];
  var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
  var filter = document.getElementById("filter");
  var failing = document.getElementById("failing-only");
  var shown = document.getElementById("shown");
  function numberKey(text, higherBetter) {
    if (text === "" || text === "NaN") return null;
    if (text === "nan") return higherBetter ? -Infinity : Infinity;
    if (text === "inf") return Infinity;
    if (text === "-inf") return -Infinity;
    var v = Number(text);
    return isNaN(v) ? null : v;
  }
  function sortBy(col, ascending) {
    var th = heads[col];
    var numeric = th.dataset.type === "num", higher = th.dataset.better === "high";
    var keyed = Array.prototype.map.call(body.rows, function (row) {
      var text = row.cells[col].textContent.trim();
      return [numeric ? numberKey(text, higher) : text, +row.dataset.line, row];
    });
    keyed.sort(function (a, b) {
      if (a[0] === null || b[0] === null) {
        return a[0] === b[0] ? a[1] - b[1] : (a[0] === null ? 1 : -1);
      }
      var d = numeric ? (a[0] < b[0] ? -1 : (a[0] > b[0] ? 1 : 0)) : a[0].localeCompare(b[0]);
      return (ascending ? d : -d) || a[1] - b[1];
    });
    keyed.forEach(function (k) { body.appendChild(k[2]); });
    heads.forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }
  function applyFilter() {
    var query = filter.value.trim().toLowerCase(), only = failing.checked, n = 0;
    Array.prototype.forEach.call(body.rows, function (row) {
      var keep = (!query || row.textContent.toLowerCase().indexOf(query) >= 0) &&
        (!only || row.classList.contains("fail"));
      row.hidden = !keep;
      if (keep) n += 1;
    });
    shown.textContent = String(n);
  }
  heads.forEach(function (th, col) {
    th.addEventListener("click", function () {
      sortBy(col, th.getAttribute("aria-sort") !== "ascending");
    });
  });
  filter.addEventListener("input", applyFilter);
  failing.addEventListener("change", applyFilter);
  Array.prototype.forEach.call(document.querySelectorAll("svg circle.pt"), function (pt) {
    pt.addEventListener("click", function () {
      var row = body.querySelector('tr[data-line="' + pt.getAttribute("data-line") + '"]');
      if (!row) return;
      row.hidden = false;
      row.scrollIntoView({block: "center"});
      row.classList.add("flash");
      setTimeout(function () { row.classList.remove("flash"); }, 1500);
    });
  });
  var params = new URLSearchParams(location.hash.slice(1));
  var wanted = params.get("sort");
  if (wanted) {
    var descending = wanted.charAt(0) === "-", name = descending ? wanted.slice(1) : wanted;
    for (var i = 0; i < heads.length; i += 1) {
      if (heads[i].dataset.col === name) { sortBy(i, !descending); break; }
    }
  }
  if (params.get("filter")) filter.value = params.get("filter");
  applyFilter();
})();
"""
