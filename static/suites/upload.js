// The multi-file upload of a suite: one variant picker per chosen file, in the order the
// browser sends the files, so the server pairs the n-th `file` with the n-th `dataset`.
(function () {
  "use strict";
  const input = document.getElementById("suite-files");
  const table = document.getElementById("file-rows");
  const source = document.getElementById("suite-datasets");
  if (!input || !table || !source) return;
  const datasets = JSON.parse(source.textContent).map(([id, label]) => ({
    id, label, key: label.split(" ")[0],
  }));

  const words = (text) => text.toLowerCase().split(/[^a-z0-9+]+/).filter(Boolean);
  const ALIASES = {
    ru: ["ru", "rus", "russian"], ar: ["ar", "arb", "arabic"], en: ["en", "eng", "english"],
    python: ["python", "py"], cpp: ["cpp", "c++"], java: ["java"], js: ["js", "javascript"],
    go: ["go", "golang"], rust: ["rust", "rs"],
  };

  // The dataset whose key shares the most words with the file's name; the first on ties.
  function guess(fileName) {
    const said = new Set(words(fileName.replace(/\.jsonl(\.gz)?$/i, "")));
    let best = null;
    let bestScore = 0;
    for (const dataset of datasets) {
      let score = 0;
      for (const part of dataset.key.split("/")) {
        const names = ALIASES[part] || [part];
        if (names.some((name) => said.has(name))) score += 1;
        else if (part.includes("-") && said.has(part.replace(/-/g, ""))) score += 1;
      }
      if (score > bestScore) {
        best = dataset;
        bestScore = score;
      }
    }
    return best;
  }

  function rebuild() {
    const body = table.tBodies[0];
    body.replaceChildren();
    const files = Array.from(input.files || []);
    table.hidden = files.length === 0;
    files.forEach((file, index) => {
      const row = body.insertRow();
      const name = document.createElement("th");
      name.scope = "row";
      name.textContent = file.name;
      row.appendChild(name);
      const cell = row.insertCell();
      const select = document.createElement("select");
      select.name = "dataset";
      select.id = `dataset-${index}`;
      select.setAttribute("aria-label", `Variant of ${file.name}`);
      const guessed = guess(file.name);
      for (const dataset of datasets) {
        const option = new Option(dataset.label, dataset.id);
        option.selected = guessed !== null && guessed.id === dataset.id;
        select.add(option);
      }
      cell.appendChild(select);
    });
  }

  input.addEventListener("change", rebuild);
  rebuild();
})();
