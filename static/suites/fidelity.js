// The fidelity page's forest plot: each pair of variants' difference in pass@1 with its
// interval, drawn with Plotly from the page's json_script data. Pairs whose Holm-corrected
// p is below alpha are drawn in red; the table under the chart holds the same numbers.
(function () {
  "use strict";

  function draw(node) {
    const script = document.getElementById(node.dataset.source);
    if (!script || typeof Plotly === "undefined") return;
    const data = JSON.parse(script.textContent);
    if (!data.pairs.length) return;
    const pairs = data.pairs.slice().reverse();
    node.style.height = Math.max(220, 26 * pairs.length + 80) + "px";
    Plotly.newPlot(node, [{
      type: "scatter", mode: "markers", orientation: "h",
      x: pairs.map((p) => p.diff), y: pairs.map((p) => p.label),
      error_x: {
        type: "data", symmetric: false,
        array: pairs.map((p) => p.high - p.diff), arrayminus: pairs.map((p) => p.diff - p.low),
      },
      marker: { size: 9, color: pairs.map((p) => (p.significant ? "#b3261e" : "#4a5568")) },
      customdata: pairs.map((p) => [p.low, p.high, p.p]),
      hovertemplate: "%{y}<br>%{x:.3f} [%{customdata[0]:.3f}, %{customdata[1]:.3f}]" +
        "<br>Holm p %{customdata[2]:.4g}<extra></extra>",
    }], {
      margin: { t: 10, r: 20, b: 40, l: 420 },
      xaxis: { title: { text: "pass@1 of A − pass@1 of B" }, zeroline: true },
      yaxis: { automargin: true },
      shapes: [{ type: "line", x0: 0, x1: 0, yref: "paper", y0: 0, y1: 1,
                 line: { color: "#888", dash: "dot" } }],
    }, { displaylogo: false, responsive: true });
    node.dataset.drawn = "true";
  }

  document.addEventListener("DOMContentLoaded", () => {
    document.querySelectorAll("#fidelity-forest").forEach(draw);
  });
})();
