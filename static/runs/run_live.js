// Live run page: joins ws/runs/<id>/ and applies the run's typed events (see
// webapp/runs/events.py). Counts come from the event with the largest `done`. Durable events
// carry `seq`; on reconnecting, the page asks for what came after the last one it saw
// (`?after=<seq>`) and the server sends exactly those, then live ones.
(function () {
  "use strict";
  const configNode = document.getElementById("run-live-config");
  if (!configNode) return;
  const config = JSON.parse(configNode.textContent);
  if (!config.live) return;

  const LOG_LIMIT = 200;
  const state = { done: config.done, seq: config.seq, logged: new Set(), finished: false, retries: 0 };
  document.querySelectorAll("#log [data-sample]").forEach((node) => {
    state.logged.add(Number(node.dataset.sample));
  });
  const $ = (id) => document.getElementById(id);

  function text(tag, content, className) {
    const node = document.createElement(tag);
    node.textContent = content;
    if (className) node.className = className;
    return node;
  }

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

  function testDots(tests, total) {
    const list = document.createElement("span");
    list.className = "tests-dots";
    list.setAttribute("aria-label", tests.filter((t) => t.status === "passed").length + " of " + total + " tests passed");
    for (const test of tests) {
      const dot = text("span", "", "dot status-" + test.status);
      dot.title = "#" + test.index + " " + test.status + ": " + test.source + (test.message ? " — " + test.message : "");
      list.appendChild(dot);
    }
    return list;
  }

  function logEntry(entry, tests, total) {
    const item = document.createElement("li");
    item.className = "log-entry status-" + entry.status;
    item.dataset.sample = entry.sample_id;
    const link = text("a", entry.task_id + " #" + entry.completion_id);
    link.href = entry.url;
    item.appendChild(link);
    item.appendChild(text("span", entry.status, "status status-" + entry.status));
    item.appendChild(text("span", Math.round(entry.duration_ms) + " ms" + (entry.cached ? " · cached" : ""), "time"));
    if (tests && tests.length) item.appendChild(testDots(tests, total));
    if (entry.first_failure) {
      const failure = document.createElement("span");
      failure.className = "failure";
      if (entry.first_failure.source) failure.appendChild(text("code", entry.first_failure.source.slice(0, 120)));
      failure.appendChild(document.createTextNode(" " + (entry.first_failure.message || "").slice(0, 160)));
      item.appendChild(failure);
    }
    return item;
  }

  function addLog(entry, tests, total) {
    if (state.logged.has(entry.sample_id)) return;
    state.logged.add(entry.sample_id);
    const log = $("log");
    log.insertBefore(logEntry(entry, tests, total), log.firstChild);
    while (log.children.length > LOG_LIMIT) log.removeChild(log.lastChild);
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
    runningRow(event.sample_id, event.task_id, event.completion_id);
  }

  // One test of a sample that is still running: a dot appears as soon as the program
  // reports it, before the sample finishes.
  function testReported(event) {
    if (state.logged.has(event.sample_id)) return;
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
    const running = document.getElementById("running-" + entry.sample_id);
    if (running) {
      // Its per-test outcomes, shown where it was running, then it moves to the log.
      running.replaceChildren(text("span", entry.task_id + " #" + entry.completion_id, "task"),
        text("span", entry.status, "status status-" + entry.status), testDots(event.tests, event.tests_total));
      setTimeout(() => running.remove(), 1500);
    }
    addLog(entry, event.tests, event.tests_total);
    applyProgress(event.progress, false);
  }

  function setStatus(status) {
    const node = $("run-status");
    node.textContent = status.charAt(0).toUpperCase() + status.slice(1);
    node.className = "status status-" + status;
    const duration = $("duration");
    if (status === "running" && duration && !duration.textContent.startsWith("running")) {
      duration.textContent = "running";  // the exact figure comes with the reload
    }
    if (["finished", "cancelled", "failed"].includes(status)) {
      const label = $("pass1-label");
      if (label) label.textContent = "pass@1";
      if (duration && duration.textContent.startsWith("running")) duration.textContent = status;
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
      body.appendChild(row);
    }
  }

  function recovering(event) {
    const notice = $("recovery-notice");
    notice.textContent = event.message + " The run is resuming by itself.";
    notice.hidden = false;
  }

  const handlers = {
    snapshot(event) {
      applyProgress(event.progress, true);
      setStatus(event.status);
      for (const entry of event.log) addLog(entry, null, 0);
      showScores(event.pass_at_k);
      if (["finished", "cancelled", "failed"].includes(event.status)) done(event.status);
    },
    run_status(event) { setStatus(event.status); applyProgress(event.progress, false); },
    sample_started: started,
    test_reported: testReported,
    sample_finished: finished,
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
    // The charts and the per-problem table are drawn by the server; a link (not an
    // automatic reload) brings them, so nothing moves under the reader's eyes.
    const link = text("a", "show the scores, charts and problems");
    link.href = window.location.pathname;
    $("live-state").replaceChildren(document.createTextNode("· " + status + " — "), link);
    $("running").replaceChildren();
    const cancel = document.getElementById("cancel-link");
    if (cancel) cancel.remove();  // Re-run appears with the reload.
    if (socket) socket.close();
  }

  function connect() {
    const scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
    const after = state.seq === null || state.seq === undefined ? "" : "?after=" + state.seq;
    socket = new WebSocket(scheme + window.location.host + config.ws_path + after);
    socket.onopen = () => { state.retries = 0; $("live-state").textContent = "· live"; };
    socket.onmessage = (message) => {
      const event = JSON.parse(message.data);
      if (event.type === "snapshot") state.seq = event.seq;
      else if (typeof event.seq === "number") state.seq = Math.max(state.seq || 0, event.seq);
      const handler = handlers[event.type];
      if (handler) handler(event);
    };
    socket.onclose = () => {
      if (state.finished) return;
      // Reconnect with backoff, asking for what came after the last event seen.
      state.retries += 1;
      $("live-state").textContent = "· reconnecting…";
      setTimeout(connect, Math.min(10000, 250 * 2 ** state.retries));
    };
  }
  connect();
})();
