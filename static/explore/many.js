// The many-runs heatmap: pass@1 of each row's run minus each column's run, drawn with
// Plotly from the page's json_script data. A click on a cell opens the two-run comparison;
// the table under the chart holds the same numbers and links for the keyboard.
(function () {
  "use strict";

  function draw(node) {
    const script = document.getElementById(node.dataset.source);
    if (!script || typeof Plotly === "undefined") return;
    const data = JSON.parse(script.textContent);
    const z = data.cells.map((row) => row.map((cell) => (cell.url ? cell.diff : null)));
    const text = data.cells.map((row) => row.map((cell) =>
      cell.url ? (cell.diff >= 0 ? "+" : "") + cell.diff.toFixed(3) + (cell.separated ? " *" : "") : ""));
    const hover = data.cells.map((row) => row.map((cell) =>
      cell.url ? "[" + cell.low.toFixed(3) + ", " + cell.high.toFixed(3) + "], Holm p " +
        (cell.p < 1e-4 ? "< 0.0001" : cell.p.toFixed(4)) : ""));
    const limit = Math.max(0.05, ...z.flat().filter((v) => v !== null).map(Math.abs));
    node.classList.add("heatmap");
    Plotly.newPlot(node, [{
      type: "heatmap", x: data.labels, y: data.labels, z: z, text: text, customdata: hover,
      texttemplate: "%{text}", colorscale: "RdBu", reversescale: true, zmin: -limit, zmax: limit,
      hovertemplate: "%{y} − %{x}<br>%{z:.4f} %{customdata}<extra></extra>",
      colorbar: { title: { text: "row − column" } },
    }], {
      margin: { t: 10, r: 10, b: 120, l: 180 },
      xaxis: { side: "bottom", tickangle: -30 },
      yaxis: { autorange: "reversed" },
    }, { displaylogo: false, responsive: true });
    node.on("plotly_click", (event) => {
      const point = event.points && event.points[0];
      if (!point) return;
      const cell = data.cells[point.pointIndex[0]][point.pointIndex[1]];
      if (cell && cell.url) window.location.assign(cell.url);
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    document.querySelectorAll("#many-heatmap").forEach(draw);
  });
})();
