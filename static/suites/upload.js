// The multi-file upload of a suite: one variant picker per chosen file, in the order the
// browser sends the files, so the server pairs the n-th `file` with the n-th `dataset`.
// Each picker starts at the variant the server detects from the file's first bytes (its
// ids, layout, code and prompts), with the reason shown; the name is only a first guess
// while that answer comes. Choosing a variant the content contradicts makes the
// confirmation box required.
(function () {
  "use strict";
  const input = document.getElementById("suite-files");
  const table = document.getElementById("file-rows");
  const source = document.getElementById("suite-datasets");
  if (!input || !table || !source) return;
  const form = input.form;
  const confirm = document.getElementById("id_confirm_variants");
  const HEAD_BYTES = 256 * 1024; // only the head is sent: the server reads its first lines
  let generation = 0;
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

  function optionFor(select, key) {
    // Datasets come newest version first within a key.
    return Array.from(select.options).find((option) => option.text.split(" ")[0] === key);
  }

  function checkMismatches() {
    let any = false;
    for (const row of table.tBodies[0].rows) {
      const select = row.querySelector("select");
      const note = row.querySelector(".variant-mismatch");
      const detected = row.dataset.detected;
      const fitting = JSON.parse(row.dataset.fitting || "[]");
      const chosen = select.options[select.selectedIndex].text.split(" ")[0];
      const wrong = Boolean(detected) && !fitting.includes(chosen);
      note.hidden = !wrong;
      note.textContent = wrong ? `The content points to ${detected}, not to ${chosen}: ` +
        "tick “Run each file on the variant chosen for it” below to keep your choice." : "";
      row.classList.toggle("mismatch", wrong);
      any = any || wrong;
    }
    if (confirm) confirm.required = any;
  }

  async function detect(file, row, select, shown, current) {
    const body = new FormData();
    body.append("head", file.slice(0, HEAD_BYTES), file.name);
    body.append("name", file.name);
    body.append("csrfmiddlewaretoken", form.querySelector("[name=csrfmiddlewaretoken]").value);
    let answer;
    try {
      const response = await fetch(table.dataset.detectUrl, {
        method: "POST", body, credentials: "same-origin",
      });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      answer = await response.json();
    } catch (error) {
      if (current === generation) {
        shown.textContent = `Could not read the file's first lines (${error.message}); ` +
          "the variant was guessed from its name.";
      }
      return;
    }
    if (current !== generation) return; // other files were chosen meanwhile
    const option = answer.key ? optionFor(select, answer.key) : null;
    if (option) {
      option.selected = true;
      row.dataset.detected = answer.key;
      row.dataset.fitting = JSON.stringify(answer.fitting);
      shown.textContent = `Detected: ${answer.reason}.`;
    } else {
      shown.textContent = `Not detected: ${answer.reason}; guessed from the file's name.`;
    }
    row.dataset.state = "detected";
    checkMismatches();
  }

  function rebuild() {
    generation += 1;
    const current = generation;
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
      const why = row.insertCell();
      why.className = "detection";
      const shown = document.createElement("span");
      shown.className = "detected-reason";
      shown.id = `detected-${index}`;
      shown.textContent = "Reading the first lines…";
      const note = document.createElement("strong");
      note.className = "variant-mismatch error";
      note.setAttribute("role", "alert");
      note.hidden = true;
      why.append(shown, " ", note);
      select.setAttribute("aria-describedby", shown.id);
      select.addEventListener("change", checkMismatches);
      row.dataset.state = "reading";
      detect(file, row, select, shown, current);
    });
    checkMismatches();
  }

  input.addEventListener("change", rebuild);
  rebuild();
})();
