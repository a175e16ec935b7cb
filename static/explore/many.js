// The many-runs heatmap: pass@1 of each row's run minus each column's run, drawn with
// Plotly from the page's json_script data. A click on a cell opens the two-run comparison;
// the table under the chart holds the same numbers and links for the keyboard.
//
// Plotly's partial bundle (the one every page loads) has no heatmap trace, so the cells
// are rectangles in data coordinates (layout shapes: they fill their cell at any size), the
// numbers a text trace on top that also carries the hover and the click, and the colour
// bar an invisible marker trace. The axes make room for their labels (automargin); a very
// long run name is shortened in the middle, its full text in the hover.
(function () {
  "use strict";

  const LABEL_MAX = 64;
  // Red for "row worse", near-white for no difference, blue for "row better".
  const STOPS = [[178, 24, 43], [247, 247, 247], [33, 102, 172]];

  function colour(value, limit) {
    const t = Math.max(-1, Math.min(1, value / limit));
    const [from, to, f] = t < 0 ? [STOPS[1], STOPS[0], -t] : [STOPS[1], STOPS[2], t];
    const mix = from.map((c, i) => Math.round(c + (to[i] - c) * f));
    return "rgb(" + mix.join(",") + ")";
  }

  function shorten(label) {
    if (label.length <= LABEL_MAX) return label;
    // Keep the end, where the run's "(#id)" is, and the start, where the model is.
    const tail = label.slice(-14);
    return label.slice(0, LABEL_MAX - tail.length - 1) + "…" + tail;
  }

  function draw(node) {
    const script = document.getElementById(node.dataset.source);
    if (!script || typeof Plotly === "undefined") return;
    const data = JSON.parse(script.textContent);
    const labels = data.labels.map(shorten);
    const diffs = data.cells.flat().filter((cell) => cell.url).map((cell) => Math.abs(cell.diff));
    const limit = Math.max(0.05, ...diffs);
    const shapes = [];
    const points = { x: [], y: [], text: [], customdata: [] };
    data.cells.forEach((row, i) => row.forEach((cell, j) => {
      if (!cell.url) return;
      shapes.push({
        type: "rect", xref: "x", yref: "y", x0: j - 0.5, x1: j + 0.5, y0: i - 0.5, y1: i + 0.5,
        fillcolor: colour(cell.diff, limit), line: { width: 1, color: "#fff" }, layer: "below",
      });
      points.x.push(j);
      points.y.push(i);
      points.text.push((cell.diff >= 0 ? "+" : "") + cell.diff.toFixed(3) + (cell.separated ? " *" : ""));
      points.customdata.push([data.labels[i], data.labels[j],
        "[" + cell.low.toFixed(3) + ", " + cell.high.toFixed(3) + "], Holm p " +
        (cell.p < 1e-4 ? "< 0.0001" : cell.p.toFixed(4)), i, j]);
    }));
    const ticks = { tickmode: "array", tickvals: labels.map((_, i) => i), ticktext: labels,
                    automargin: true, showgrid: false, zeroline: false, fixedrange: true };
    node.classList.add("heatmap");
    node.style.height = Math.max(300, 70 * labels.length + 180) + "px";
    Plotly.newPlot(node, [{
      type: "scatter", mode: "markers+text", x: points.x, y: points.y, text: points.text,
      customdata: points.customdata, textfont: { size: 13 },
      // Invisible markers as large as a cell catch the hover and the click.
      marker: { size: 40, opacity: 0, symbol: "square" },
      hovertemplate: "%{customdata[0]} − %{customdata[1]}<br>%{text} %{customdata[2]}<extra></extra>",
      showlegend: false,
    }, {
      type: "scatter", mode: "markers", x: [null], y: [null], hoverinfo: "skip", showlegend: false,
      marker: { color: [-limit, limit], cmin: -limit, cmax: limit, showscale: true,
                colorscale: STOPS.map((c, i) => [i / 2, "rgb(" + c.join(",") + ")"]),
                colorbar: { title: { text: "row − column" }, thickness: 14 } },
    }], {
      margin: { t: 10, r: 10, b: 10, l: 10 },
      shapes: shapes,
      xaxis: { ...ticks, side: "bottom", tickangle: -30, range: [-0.5, labels.length - 0.5] },
      yaxis: { ...ticks, range: [labels.length - 0.5, -0.5] },
      hovermode: "closest",
    }, { displaylogo: false, responsive: true });
    node.on("plotly_click", (event) => {
      const point = event.points && event.points[0];
      if (!point || !point.customdata) return;
      const cell = data.cells[point.customdata[3]][point.customdata[4]];
      if (cell && cell.url) window.location.assign(cell.url);
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    document.querySelectorAll("#many-heatmap").forEach(draw);
  });
})();
