// Charts of the exploration pages, drawn with Plotly (served from static/vendor/plotly).
// Each chart is a <div data-chart="pass-at-k|failures" data-source="<json_script id>">;
// its data comes from the page through json_script, never pasted into the script.
(function () {
  "use strict";
  const COLORS = ["#2455c3", "#c0392b", "#1e7d3a", "#8e44ad", "#d35400", "#16a085", "#7f8c8d", "#b7950b", "#2c3e50"];

  function rgba(hex, alpha) {
    const value = parseInt(hex.slice(1), 16);
    return "rgba(" + (value >> 16) + "," + ((value >> 8) & 255) + "," + (value & 255) + "," + alpha + ")";
  }

  function source(node) {
    const script = document.getElementById(node.dataset.source);
    return script ? JSON.parse(script.textContent) : null;
  }

  const CONFIG = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["lasso2d", "select2d"] };

  // pass@k for k = 1…n on a log axis: a line per run and its bootstrap band (the area
  // between the interval's low and high values).
  function drawPassAtK(node, curves) {
    const maxK = Math.max(...curves.map((c) => c.k[c.k.length - 1] || 1));
    if (maxK === 1) return drawPassAt1(node, curves);
    const traces = [];
    curves.forEach((curve, i) => {
      const color = COLORS[i % COLORS.length];
      const group = "r" + curve.run_id;
      if (curve.k.length > 1) {
        traces.push({ x: curve.k, y: curve.high, mode: "lines", line: { width: 0 }, hoverinfo: "skip",
          showlegend: false, legendgroup: group });
        traces.push({ x: curve.k, y: curve.low, mode: "lines", line: { width: 0 }, fill: "tonexty",
          fillcolor: rgba(color, 0.18), hoverinfo: "skip", showlegend: false, legendgroup: group });
      }
      traces.push({ x: curve.k, y: curve.value, mode: curve.k.length > 1 ? "lines+markers" : "markers",
        marker: { size: curve.k.length > 1 ? 4 : 9, color: color }, line: { color: color, width: 2 },
        name: curve.label, legendgroup: group,
        error_y: curve.k.length > 1 ? undefined : errorBars(curve, color),
        customdata: curve.k.map((_, j) => [curve.low[j], curve.high[j]]),
        hovertemplate: "pass@%{x} = %{y:.4f}<br>95% [%{customdata[0]:.4f}, %{customdata[1]:.4f}]<extra>" + escapeHtml(curve.label) + "</extra>" });
    });
    Plotly.newPlot(node, traces, {
      margin: { t: 10, r: 10, b: 45, l: 55 },
      xaxis: { type: "log", title: { text: "k (log scale)" }, range: [-0.02, Math.log10(maxK) + 0.02],
        tickvals: [1, 2, 3, 5, 10, 20, 30, 50, 100, 200, 500, 1000].filter((v) => v <= maxK).concat(maxK) },
      yaxis: { title: { text: "pass@k" }, range: [0, 1.02], tickformat: ".0%" },
      legend: { orientation: "h", y: -0.25 },
      hovermode: "closest",
    }, CONFIG);
  }

  function errorBars(curve, color) {
    return { type: "data", symmetric: false, color: color, thickness: 2, width: 8,
      array: curve.value.map((v, j) => curve.high[j] - v), arrayminus: curve.value.map((v, j) => v - curve.low[j]) };
  }

  function escapeHtml(text) {
    return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }

  // Runs of one sample per task have only pass@1: one point per run with its interval.
  function drawPassAt1(node, curves) {
    const traces = curves.map((curve, i) => {
      const color = COLORS[i % COLORS.length];
      return { x: [curve.label], y: curve.value, mode: "markers", name: curve.label,
        marker: { size: 11, color: color }, error_y: errorBars(curve, color),
        customdata: [[curve.low[0], curve.high[0]]],
        hovertemplate: "pass@1 = %{y:.4f}<br>95% [%{customdata[0]:.4f}, %{customdata[1]:.4f}]<extra></extra>" };
    });
    Plotly.newPlot(node, traces, {
      margin: { t: 10, r: 10, b: 60, l: 55 }, showlegend: false,
      xaxis: { title: { text: "pass@1 with its 95% interval (one sample per task: no curve)" }, type: "category" },
      yaxis: { title: { text: "pass@1" }, range: [0, 1.02], tickformat: ".0%" },
    }, CONFIG);
  }

  // Failing samples by status and error type; a bar opens the samples behind it.
  function drawFailures(node, bars) {
    const trace = {
      type: "bar", orientation: "h",
      y: bars.map((b) => b.label).reverse(), x: bars.map((b) => b.count).reverse(),
      customdata: bars.map((b) => b.url).reverse(),
      marker: { color: bars.map((b) => (b.status === "timeout" || b.status === "memory" ? "#9a6700" : "#b3261e")).reverse() },
      hovertemplate: "%{y}: %{x} sample(s)<br>click to open them<extra></extra>",
    };
    node.style.height = Math.max(140, 40 + 26 * bars.length) + "px";
    Plotly.newPlot(node, [trace], {
      margin: { t: 5, r: 10, b: 35, l: 260 }, xaxis: { title: { text: "samples" } },
      yaxis: { automargin: true },
    }, CONFIG).then(() => {
      node.on("plotly_click", (event) => {
        const url = event.points && event.points[0] && event.points[0].customdata;
        if (url) window.location.href = url;
      });
    });
  }

  function init() {
    if (typeof Plotly === "undefined") return;
    document.querySelectorAll("[data-chart]").forEach((node) => {
      const data = source(node);
      if (!data) return;
      if (node.dataset.chart === "pass-at-k" && data.curves && data.curves.length) drawPassAtK(node, data.curves);
      if (node.dataset.chart === "failures" && data.failures && data.failures.length) drawFailures(node, data.failures);
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
