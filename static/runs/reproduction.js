// While a reproduction runs, its page polls its progress and reloads when the job ends,
// so that the comparison is drawn by the server from the final verdicts.
(function () {
  "use strict";
  const section = document.getElementById("reproduction-progress");
  if (!section) return;
  const bar = document.getElementById("progress-bar");
  const text = document.getElementById("progress-text");
  const state = document.getElementById("progress-state");
  const POLL_MS = 1000;

  async function poll() {
    try {
      const response = await fetch(section.dataset.statusUrl, {headers: {Accept: "application/json"}});
      if (!response.ok) throw new Error(`status ${response.status}`);
      const progress = await response.json();
      bar.max = progress.total;
      bar.value = progress.done;
      text.textContent = `${progress.done} / ${progress.total}`;
      if (!progress.active) {
        state.textContent = "done; drawing the comparison…";
        window.location.reload();
        return;
      }
    } catch (error) {
      state.textContent = `could not read the progress (${error.message}); trying again`;
    }
    setTimeout(poll, POLL_MS);
  }
  setTimeout(poll, POLL_MS);
})();
