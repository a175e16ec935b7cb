// Live run page: joins ws/runs/<id>/ and applies the run's typed events (see
// webapp/runs/domain/events.py). Counts come from the event with the largest `done`. Durable events
// carry `seq`; on reconnecting, the page asks for what came after the last one it saw
// (`?after=<seq>`) and the server sends exactly those, then live ones.
//
// "Running now" holds one row per sample that has started and not ended, keyed by sample
// id, so a repeated event changes nothing. Events may come out of order: one sent from the
// database (a catch-up, a snapshot) overtakes a `sample_started` still in the channel. A
// sample that ended never gets a row again; when its `sample_finished` comes again live,
// the server says `sample_ended`; a snapshot or a recovery (work taken back from a dead
// worker) clears the rows, which the samples still running fill again as they report.
//
// This script runs before any chart code and opens the socket first. The per-problem table
// and the charts are redrawn from the page's own counts, at most a few times a second: the
// counts the page was drawn with (up to event `seq`) plus every sample_finished after it.
(function () {
  "use strict";
  const configNode = document.getElementById("run-live-config");
  if (!configNode) return;
  const config = JSON.parse(configNode.textContent);

  const LOG_LIMIT = 200;
  const REDRAW_MS = 300;
  const FINAL = ["finished", "cancelled", "failed"];
  // webapp/runs/pages/consumers.py: refused (the run is not, or no longer, visible to this user),
  // and "try again later" (the server's channel layer is away for a moment).
  const CLOSE_NOT_ALLOWED = 4403;
  const CLOSE_TRY_AGAIN = 1013;
  const $ = (id) => document.getElementById(id);

  // charts.js waits for this before fetching Plotly (or for a few seconds at most, so a
  // page whose socket cannot open still gets its charts).
  let socketOpened;
  window.workbenchLive = { opened: new Promise((resolve) => { socketOpened = resolve; }) };
  setTimeout(() => socketOpened(), config.live ? 3000 : 0);

  function text(tag, content, className) {
    const node = document.createElement(tag);
    node.textContent = content;
    if (className) node.className = className;
    return node;
  }

  // -- per-problem counts, the table and the charts -----------------------------------------
  const problems = new Map();  // task id -> {n, c, failure}
  for (const [taskId, n, c] of config.problems || []) problems.set(taskId, { n: n, c: c, failure: null });
  const rows = new Map();
  document.querySelectorAll("#problem-table tr[data-task]").forEach((row) => rows.set(row.dataset.task, row));
  const failures = new Map();  // "status|error type" -> bar
  const chartData = $("run-chart-data") ? JSON.parse($("run-chart-data").textContent) : {};
  for (const bar of chartData.failures || []) failures.set(bar.status + "|" + (bar.error_type || ""), Object.assign({}, bar));
  const dirty = new Set();

  // The table's show and status filters (kept in the URL), applied again as samples
  // arrive: the server sent every row of a live table, hiding those that did not match
  // yet (reports.run_problem_table, whose rules these are).
  const tableFilter = config.table_filter || { show: "all", status: "" };
  const statusesOf = new Map();  // task id -> the statuses its finished samples had
  rows.forEach((row, taskId) => statusesOf.set(taskId, new Set((row.dataset.statuses || "").split(" ").filter(Boolean))));

  function rowMatches(taskId, counts) {
    if (tableFilter.status && !statusesOf.get(taskId).has(tableFilter.status)) return false;
    if (tableFilter.show === "failing") return counts.c < counts.n;
    if (tableFilter.show === "unsolved") return counts.c === 0;
    if (tableFilter.show === "solved") return counts.c === counts.n;
    return true;
  }

  function countShownRows() {
    let shown = 0;
    rows.forEach((row) => { if (!row.hidden) shown += 1; });
    const count = document.querySelector("#problems-title .hint");  // "(shown of total)"
    if (count) count.textContent = count.textContent.replace(/^\(\d+/, "(" + shown);
    if ($("problems-none")) $("problems-none").hidden = shown > 0;
  }
  let countedSeq = config.seq;
  let redrawPending = false;

  // pass@k of one problem with n samples of which c pass: the unbiased estimator of Chen et
  // al. (2021, "Evaluating Large Language Models Trained on Code"), 1 - C(n-c, k) / C(n, k),
  // as a product so that large n does not overflow.
  function passAtK(n, c, k) {
    if (n - c < k) return 1;
    let fail = 1;
    for (let i = n - c + 1; i <= n; i++) fail *= 1 - k / i;
    return 1 - fail;
  }

  function rateClass(value) {
    if (value === null) return "r-none";
    if (value <= 0) return "r0";
    if (value >= 1) return "r4";
    return "r" + (1 + Math.min(2, Math.floor(value * 3)));
  }

  function setRate(cell, value) {
    if (!cell) return;
    cell.textContent = value === null ? "—" : value.toFixed(3);
    cell.className = cell.className.replace(/\br(?:-none|\d)\b/g, "").trim() + " " + rateClass(value);
  }

  function drawRow(taskId) {
    const row = rows.get(taskId);
    const counts = problems.get(taskId);
    if (!row || !counts) return;
    row.querySelector('[data-cell="n"]').textContent = counts.n;
    row.querySelector('[data-cell="c"]').textContent = counts.c;
    setRate(row.querySelector('[data-cell="pass1"]'), counts.n ? counts.c / counts.n : null);
    const k = config.table_k;
    if (k) setRate(row.querySelector('[data-cell="passk"]'), counts.n >= k ? passAtK(counts.n, counts.c, k) : null);
    if (counts.failure !== null) row.querySelector('[data-cell="failure"]').textContent = counts.failure;
    row.hidden = !rowMatches(taskId, counts);
  }

  // For each k, the mean pass@k over the problems with at least k finished samples.
  function liveCurve() {
    const ks = [], values = [], behind = [];
    const top = Math.max(1, config.samples_per_task || 1);
    for (let k = 1; k <= top; k++) {
      let sum = 0, count = 0;
      for (const counts of problems.values()) {
        if (counts.n < k) continue;
        sum += passAtK(counts.n, counts.c, k);
        count += 1;
      }
      if (!count) break;
      ks.push(k); values.push(sum / count); behind.push(count);
    }
    return { run_id: config.run_id, label: config.label + ", so far", live: true, k: ks,
      value: values, low: values, high: values, problems: behind };
  }

  function failureBars() {
    return [...failures.values()].sort((a, b) => b.count - a.count || a.label.localeCompare(b.label));
  }

  function drawFailureLinks(bars) {
    const list = $("failure-links");
    if (!list) return;
    list.replaceChildren(...bars.map((bar) => {
      const item = document.createElement("li");
      const link = document.createElement("a");
      link.href = bar.url;
      link.appendChild(text("span", bar.status, "status status-" + bar.status));
      if (bar.error_type) link.appendChild(document.createTextNode(" · " + bar.error_type));
      item.append(link, " ", text("span", String(bar.count), "count"));
      return item;
    }));
  }

  function redraw() {
    redrawPending = false;
    const filtered = dirty.size > 0;
    for (const taskId of dirty) drawRow(taskId);
    dirty.clear();
    if (filtered) countShownRows();
    const charts = window.workbenchCharts;
    const curveNode = $("pass-at-k-chart");
    if (charts && curveNode && problems.size) {
      const curve = liveCurve();
      // With the finished runs the reader chose to overlay, if any.
      if (curve.k.length) charts.draw(curveNode, "pass-at-k", [curve, ...(chartData.curves || [])]);
    }
    const bars = failureBars();
    const section = $("failures-section");
    if (section && bars.length) {
      section.hidden = false;
      drawFailureLinks(bars);
      if (charts) charts.draw($("failure-chart"), "failures", bars);
    }
  }

  function scheduleRedraw() {
    if (redrawPending) return;
    redrawPending = true;
    setTimeout(redraw, REDRAW_MS);
  }

  function samplesUrl(status, errorType) {
    return config.samples_url + "?" + new URLSearchParams({ status: status, error_type: errorType || "-" });
  }

  // Each finished sample counts once: events come in `seq` order, and one at or below the
  // counts already held is skipped.
  function countSample(event) {
    if (event.seq <= countedSeq) return;
    countedSeq = event.seq;
    const entry = event.entry;
    const counts = problems.get(entry.task_id);
    if (counts) {
      counts.n += 1;
      if (entry.status === "passed") counts.c += 1;
      else counts.failure = (entry.first_failure && (entry.first_failure.message || entry.first_failure.source)) || entry.status;
      if (statusesOf.has(entry.task_id)) statusesOf.get(entry.task_id).add(entry.status);
      dirty.add(entry.task_id);
    }
    if (entry.status !== "passed" && config.samples_url) {
      const key = entry.status + "|" + (entry.error_type || "");
      const bar = failures.get(key) || { status: entry.status, error_type: entry.error_type || "", count: 0,
        label: entry.error_type ? entry.status + ": " + entry.error_type : entry.status,
        url: samplesUrl(entry.status, entry.error_type) };
      bar.count += 1;
      failures.set(key, bar);
    }
    scheduleRedraw();
  }

  // A snapshot replaces the counts (it comes when too much was missed to send one by one).
  function resetCounts(event) {
    if (!event.problems || event.seq < countedSeq) return;
    countedSeq = event.seq;
    for (const row of event.problems) {
      problems.set(row.task_id, { n: row.n, c: row.c, failure: (problems.get(row.task_id) || {}).failure || null });
      dirty.add(row.task_id);
    }
    // Only the statuses are in a snapshot: the bars lose their error types until a reload.
    failures.clear();
    for (const [status, count] of Object.entries(event.progress.by_status)) {
      if (status === "passed" || status === "pending" || !count) continue;
      failures.set(status + "|", { status: status, error_type: "", count: count, label: status,
        url: config.samples_url + "?" + new URLSearchParams({ status: status }) });
    }
    scheduleRedraw();
  }

  // -- the summary: sandbox, duration --------------------------------------------------------
  function showSandbox(sandbox) {
    const line = $("summary-sandbox");
    // Known already when the server drew it in bold.
    if (!sandbox || !line || line.querySelector("strong")) return;
    const shown = [text("strong", sandbox.level || sandbox.backend)];
    if (sandbox.level) shown.push(document.createTextNode(" (" + sandbox.backend + ")"));
    if (sandbox.chosen) shown.push(document.createTextNode(" "), text("span", sandbox.chosen, "hint"));
    const unknown = line.querySelector(".hint");
    if (unknown) unknown.replaceWith(...shown);
    else line.prepend(...shown);
  }

  let clockStart = null;  // performance.now() at the run's start, by the server's clock
  let clockTimer = null;
  function formatSeconds(seconds) {
    const whole = Math.max(0, Math.floor(seconds));
    if (whole < 60) return whole + " s";
    const minutes = Math.floor(whole / 60);
    return (minutes >= 60 ? Math.floor(minutes / 60) + " h " + String(minutes % 60).padStart(2, "0") + " min "
      : minutes + " min ") + String(whole % 60).padStart(2, "0") + " s";
  }
  function tick() {
    const duration = $("duration");
    if (duration) duration.textContent = "running for " + formatSeconds((performance.now() - clockStart) / 1000);
  }
  function startClock(secondsAgo) {
    if (clockStart !== null) return;
    clockStart = performance.now() - secondsAgo * 1000;
    tick();
    clockTimer = setInterval(tick, 1000);
  }
  function stopClock(status) {
    const duration = $("duration");
    if (clockTimer !== null) clearInterval(clockTimer);
    if (duration && clockStart !== null) {
      duration.textContent = "about " + formatSeconds((performance.now() - clockStart) / 1000) + " (" + status + ")";
    } else if (duration && duration.textContent.startsWith("waiting")) {
      duration.textContent = status;
    }
    clockStart = null;
  }
  if (typeof config.running_seconds === "number") startClock(config.running_seconds);

  // -- counters, the log, the samples running now --------------------------------------------
  const state = { done: config.done, seq: config.seq, logged: new Set(), ended: new Set(),
    finished: false, retries: 0 };
  document.querySelectorAll("#log [data-sample]").forEach((node) => {
    state.logged.add(Number(node.dataset.sample));
    state.ended.add(Number(node.dataset.sample));
  });

  function applyProgress(progress, force) {
    if (!force && progress.done < state.done) return;
    state.done = progress.done;
    $("progress-bar").max = progress.total;
    $("progress-bar").value = progress.done;
    $("progress-text").textContent = progress.done + " / " + progress.total;
    $("pass1").textContent = progress.pass1 === null ? "—" : progress.pass1.toFixed(3);
    $("cached").textContent = progress.cached;
    for (const [status, count] of Object.entries(progress.by_status)) {
      const cell = document.querySelector('#counts [data-status="' + status + '"]');
      if (cell) cell.textContent = count;
    }
  }

  // A log entry arrives drawn by the server (templates/runs/_log_entry.html, escaped there);
  // it is parsed inertly, as a template's content, and inserted as it is.
  function fromServer(html) {
    const holder = document.createElement("template");
    holder.innerHTML = html;
    return holder.content.querySelector("li");
  }

  function addLog(entry) {
    showSandbox(entry.sandbox);
    if (state.logged.has(entry.sample_id)) return null;
    state.logged.add(entry.sample_id);
    const item = fromServer(entry.html);
    if (!item) return null;
    const log = $("log");
    log.insertBefore(item, log.firstChild);
    while (log.children.length > LOG_LIMIT) log.removeChild(log.lastChild);
    return item;
  }

  function runningRow(sampleId, taskId, completionId) {
    let item = document.getElementById("running-" + sampleId);
    if (!item) {
      item = document.createElement("li");
      item.id = "running-" + sampleId;
      item.appendChild(text("span", taskId + " #" + completionId, "task"));
      item.appendChild(text("span", "running…", "status status-pending"));
      const dots = text("span", "", "tests-dots live-tests");
      dots.setAttribute("aria-label", "tests reported so far");
      item.appendChild(dots);
      $("running").appendChild(item);
    }
    return item;
  }

  function started(event) {
    if (state.ended.has(event.sample_id)) return;  // it overtook this: no row
    runningRow(event.sample_id, event.task_id, event.completion_id);
  }

  function ended(sampleId) {
    state.ended.add(sampleId);
    const running = document.getElementById("running-" + sampleId);
    if (running) running.remove();
  }

  function clearRunning() {
    $("running").replaceChildren();
  }

  // One test of a sample that is still running: a dot appears as soon as the program
  // reports it, before the sample finishes.
  function testReported(event) {
    if (state.ended.has(event.sample_id)) return;
    const item = runningRow(event.sample_id, event.task_id, event.completion_id);
    const dots = item.querySelector(".live-tests");
    const test = event.test;
    if (dots.querySelector('[data-test="' + test.index + '"]')) return;
    const dot = text("span", "", "dot status-" + test.status);
    dot.dataset.test = test.index;
    dot.title = "#" + test.index + " " + test.status + ": " + test.source + (test.message ? " — " + test.message : "");
    dots.appendChild(dot);
    const passed = dots.querySelectorAll(".status-passed").length;
    dots.setAttribute("aria-label", passed + " of " + dots.children.length + " tests reported so far passed");
  }

  function finished(event) {
    const entry = event.entry;
    // It leaves "Running now" at once; its per-test outcomes are on its log entry.
    ended(entry.sample_id);
    addLog(entry);
    applyProgress(event.progress, false);
    countSample(event);
  }

  function setStatus(status) {
    const node = $("run-status");
    node.textContent = status.charAt(0).toUpperCase() + status.slice(1);
    node.className = "status status-" + status;
    if (status === "running") startClock(0);
    if (FINAL.includes(status)) {
      const label = $("pass1-label");
      if (label) label.textContent = "pass@1";
      stopClock(status);
    }
  }

  function showScores(values) {
    const body = document.querySelector("#pass-at-k tbody");
    if (!values.length) return;
    body.replaceChildren();
    for (const value of values) {
      const row = document.createElement("tr");
      row.appendChild(text("td", String(value.k)));
      row.appendChild(text("td", value.value.toFixed(4)));
      row.appendChild(text("td", value.low.toFixed(4) + " – " + value.high.toFixed(4)));
      row.appendChild(text("td", "with the reload", "hint"));  // the permalinks
      body.appendChild(row);
    }
  }

  function recovering(event) {
    clearRunning();  // the taken-back samples run again, and say so when they start
    const notice = $("recovery-notice");
    notice.textContent = event.message + " The run is resuming by itself.";
    notice.hidden = false;
  }

  const handlers = {
    snapshot(event) {
      clearRunning();
      for (const entry of event.log) state.ended.add(entry.sample_id);
      applyProgress(event.progress, true);
      setStatus(event.status);
      for (const entry of event.log) addLog(entry);
      resetCounts(event);
      showScores(event.pass_at_k);
      if (FINAL.includes(event.status)) done(event.status);
    },
    run_status(event) { setStatus(event.status); applyProgress(event.progress, false); },
    sample_started: started,
    test_reported: testReported,
    sample_finished: finished,
    sample_ended(event) { ended(event.sample_id); },
    run_recovering: recovering,
    run_finished(event) {
      setStatus(event.status);
      applyProgress(event.progress, true);
      showScores(event.pass_at_k);
      done(event.status);
    },
  };

  let socket = null;
  function done(status) {
    state.finished = true;
    redraw();
    // The bootstrap bands and each problem's most common failure are computed by the
    // server when the run ends; a link (not an automatic reload) brings them, so nothing
    // moves under the reader's eyes.
    const link = text("a", "show the final table and charts, with their intervals");
    link.href = window.location.pathname;
    $("live-state").replaceChildren(document.createTextNode("· " + status + " — "), link);
    clearRunning();
    const cancel = document.getElementById("cancel-link");
    if (cancel) cancel.remove();  // Re-run appears with the reload.
    if (socket) socket.close();
  }

  function connect() {
    const scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
    const after = state.seq === null || state.seq === undefined ? "" : "?after=" + state.seq;
    socket = new WebSocket(scheme + window.location.host + config.ws_path + after);
    socket.onopen = () => {
      state.retries = 0;
      $("live-state").textContent = "· live";
      socketOpened();
    };
    socket.onmessage = (message) => {
      const frame = JSON.parse(message.data);
      // Several events of a worker may come in one frame, to be handled in their order.
      for (const event of frame.type === "events" ? frame.events : [frame]) {
        if (event.type === "snapshot") state.seq = event.seq;
        else if (typeof event.seq === "number") state.seq = Math.max(state.seq || 0, event.seq);
        const handler = handlers[event.type];
        if (handler) handler(event);
      }
    };
    socket.onclose = (closed) => {
      if (state.finished) return;
      if (closed.code === CLOSE_NOT_ALLOWED) {
        // Deleted, made private, or the session ended: trying again would not help.
        $("live-state").textContent = "· no longer shown live to you: reload the page";
        return;
      }
      // Reconnect with backoff, asking for what came after the last event seen.
      state.retries += 1;
      $("live-state").textContent = closed.code === CLOSE_TRY_AGAIN
        ? "· the server's message service is away for a moment; trying again, reconnecting…"
        : "· reconnecting…";
      $("live-state").dataset.closeCode = String(closed.code);
      setTimeout(connect, Math.min(10000, 250 * 2 ** state.retries));
    };
  }

  if (config.live) connect();
  // The rows and curve so far, drawn once the other deferred scripts (charts.js) have run.
  if (problems.size) {
    problems.forEach((_, taskId) => dirty.add(taskId));
    document.addEventListener("DOMContentLoaded", redraw);
  }
})();
