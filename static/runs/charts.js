// Charts of the exploration pages, drawn with Plotly. Each chart is a
// <div data-chart="pass-at-k|failures" data-source="<json_script id>" data-plotly="<bundle url>">;
// its data comes from the page through json_script, never pasted into the script.
//
// The Plotly bundle is not a <script> tag of the page: it is fetched here, asynchronously,
// after the first paint, and on a live run page only once the websocket has opened
// (window.workbenchLive.opened, from run_live.js), so that parsing it never delays either.
// run_live.js redraws the charts of a running run through window.workbenchCharts.
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

  let loading = null;
  function loadPlotly() {
    if (window.Plotly) return Promise.resolve(window.Plotly);
    if (loading) return loading;
    const holder = document.querySelector("[data-plotly]");
    if (!holder) return Promise.reject(new Error("this page names no Plotly bundle"));
    loading = new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = holder.dataset.plotly;
      script.async = true;
      script.onload = () => resolve(window.Plotly);
      script.onerror = () => reject(new Error("could not load " + holder.dataset.plotly));
      document.head.appendChild(script);
    });
    return loading;
  }

  function pushBand(traces, curve, color, group, alpha) {
    traces.push({ x: curve.k, y: curve.high, mode: "lines", line: { width: 0 }, hoverinfo: "skip",
      showlegend: false, legendgroup: group });
    traces.push({ x: curve.k, y: curve.low, mode: "lines", line: { width: 0 }, fill: "tonexty",
      fillcolor: rgba(color, alpha), hoverinfo: "skip", showlegend: false, legendgroup: group });
  }

  // pass^k, the chance that all k samples pass, in the run's colour but dashed, after its
  // pass@k (so the first line of the chart stays pass@k). pass^1 is pass@1: one point.
  function pushPassHatK(traces, curve, color) {
    const hat = curve.pass_hat_k;
    if (!hat || hat.k.length < 2) return;
    const group = "h" + curve.run_id;
    pushBand(traces, hat, color, group, 0.09);
    traces.push({ x: hat.k, y: hat.value, mode: "lines", line: { color: color, width: 2, dash: "dash" },
      name: curve.label + " · pass^k", legendgroup: group, meta: "pass^k",
      customdata: hat.k.map((_, j) => [hat.low[j], hat.high[j]]),
      hovertemplate: "pass^%{x} = %{y:.4f}<br>95% [%{customdata[0]:.4f}, %{customdata[1]:.4f}]<extra>" + escapeHtml(curve.label) + "</extra>" });
  }

  // pass@k for k = 1…n on a log axis: a line per run and its bootstrap band (the area
  // between the interval's low and high values), and pass^k's when the data has it. A curve
  // marked `live` is a running estimate with no band; its customdata is the number of
  // problems behind each point.
  function drawPassAtK(node, curves) {
    const maxK = Math.max(...curves.map((c) => c.k[c.k.length - 1] || 1));
    if (maxK === 1) return drawPassAt1(node, curves);
    const traces = [];
    const withHat = curves.some((curve) => curve.pass_hat_k && curve.pass_hat_k.k.length > 1);
    curves.forEach((curve, i) => {
      const color = COLORS[i % COLORS.length];
      const group = "r" + curve.run_id;
      if (curve.k.length > 1 && !curve.live) pushBand(traces, curve, color, group, 0.18);
      const trace = { x: curve.k, y: curve.value, mode: curve.k.length > 1 ? "lines+markers" : "markers",
        marker: { size: curve.k.length > 1 ? 4 : 9, color: color }, line: { color: color, width: 2 },
        name: curve.label, legendgroup: group };
      if (curve.live) {
        trace.customdata = curve.problems;
        trace.hovertemplate = "pass@%{x} = %{y:.4f} so far, over %{customdata} problem(s)<extra>" + escapeHtml(curve.label) + "</extra>";
      } else {
        trace.error_y = curve.k.length > 1 ? undefined : errorBars(curve, color);
        trace.customdata = curve.k.map((_, j) => [curve.low[j], curve.high[j]]);
        trace.hovertemplate = "pass@%{x} = %{y:.4f}<br>95% [%{customdata[0]:.4f}, %{customdata[1]:.4f}]<extra>" + escapeHtml(curve.label) + "</extra>";
      }
      trace.meta = "pass@k";
      traces.push(trace);
      pushPassHatK(traces, curve, color);
    });
    return Plotly.react(node, traces, {
      margin: { t: 10, r: 10, b: 45, l: 55 },
      xaxis: { type: "log", title: { text: "k (log scale)" }, range: [-0.02, Math.log10(maxK) + 0.02],
        tickvals: [1, 2, 3, 5, 10, 20, 30, 50, 100, 200, 500, 1000].filter((v) => v <= maxK).concat(maxK) },
      yaxis: { title: { text: withHat ? "pass@k (solid), pass^k (dashed)" : "pass@k" }, range: [0, 1.02], tickformat: ".0%" },
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
      const trace = { x: [curve.label], y: curve.value, mode: "markers", name: curve.label,
        marker: { size: 11, color: color } };
      if (curve.live) {
        trace.customdata = curve.problems;
        trace.hovertemplate = "pass@1 = %{y:.4f} so far, over %{customdata} problem(s)<extra></extra>";
      } else {
        trace.error_y = errorBars(curve, color);
        trace.customdata = [[curve.low[0], curve.high[0]]];
        trace.hovertemplate = "pass@1 = %{y:.4f}<br>95% [%{customdata[0]:.4f}, %{customdata[1]:.4f}]<extra></extra>";
      }
      return trace;
    });
    const live = curves.some((curve) => curve.live);
    return Plotly.react(node, traces, {
      margin: { t: 10, r: 10, b: 60, l: 55 }, showlegend: false,
      xaxis: { title: { text: live ? "pass@1 so far (one sample per task: no curve)"
        : "pass@1 with its 95% interval (one sample per task: no curve)" }, type: "category" },
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
    return Plotly.react(node, [trace], {
      margin: { t: 5, r: 10, b: 35, l: 260 }, xaxis: { title: { text: "samples" } },
      yaxis: { automargin: true },
    }, CONFIG).then(() => {
      if (node.dataset.clickable) return;
      node.dataset.clickable = "1";
      node.on("plotly_click", (event) => {
        const url = event.points && event.points[0] && event.points[0].customdata;
        if (url) window.location.href = url;
      });
    });
  }

  const DRAW = { "pass-at-k": drawPassAtK, failures: drawFailures };

  // The newest data of each chart waits here until Plotly has loaded, then is drawn once.
  const waiting = new Map();
  let ready = false;

  function draw(node, kind, data) {
    if (!data || !data.length) return;
    if (!ready) { waiting.set(node, [kind, data]); return; }
    DRAW[kind](node, data);
  }

  function failed(error) {
    document.querySelectorAll("[data-chart]").forEach((node) => {
      node.replaceChildren(document.createTextNode("The chart could not be drawn (" + error.message +
        "); the same numbers are in the tables of this page."));
      node.classList.add("chart-failed");
    });
  }

  window.workbenchCharts = { draw: draw };

  function init() {
    const nodes = document.querySelectorAll("[data-chart]");
    nodes.forEach((node) => {
      const data = source(node);
      if (!data) return;
      if (node.dataset.chart === "pass-at-k" && !waiting.has(node)) draw(node, "pass-at-k", data.curves);
      if (node.dataset.chart === "failures" && !waiting.has(node)) draw(node, "failures", data.failures);
    });
    if (!nodes.length) return;
    const live = window.workbenchLive ? window.workbenchLive.opened : Promise.resolve();
    // After the first paint, and on a live page after the websocket has opened.
    live.then(() => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0))))
      .then(loadPlotly)
      .then(() => {
        ready = true;
        for (const [node, [kind, data]] of waiting) DRAW[kind](node, data);
        waiting.clear();
      })
      .catch(failed);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
