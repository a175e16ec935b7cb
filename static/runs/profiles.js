// The run page's "Harness profiles" section: while a comparison is queued or running, ask
// its status endpoint every few seconds and draw the section again from the answer, until
// it is done or failed. The server renders the section; this only swaps it in.
(function () {
  "use strict";
  const section = document.getElementById("harness-profiles");
  if (!section) return;
  const url = section.dataset.statusUrl;
  const INTERVAL_MS = 2000;
  const MAX_INTERVAL_MS = 30000;
  let delay = INTERVAL_MS;

  function inProgress() {
    const body = section.querySelector(".profiles-body");
    return body && body.dataset.inProgress === "1";
  }

  function schedule() {
    window.setTimeout(poll, delay);
  }

  function poll() {
    fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then((response) => {
        if (!response.ok) throw new Error("status " + response.status);
        return response.json();
      })
      .then((state) => {
        delay = INTERVAL_MS;
        const body = section.querySelector(".profiles-body");
        const changed = !body || body.dataset.status !== state.status ||
          section.dataset.done !== String(state.profiles_done);
        section.dataset.done = String(state.profiles_done);
        if (changed) section.innerHTML = state.html;
        if (state.in_progress) schedule();
      })
      .catch(() => {
        // The server or the network is away for a moment: try again, less often.
        delay = Math.min(delay * 2, MAX_INTERVAL_MS);
        schedule();
      });
  }

  if (inProgress()) schedule();
})();
