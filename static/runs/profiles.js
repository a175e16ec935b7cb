// The run page's "Harness profiles" section: while a comparison is queued or running, follow
// its status endpoint (common/poll.js) and draw the section again from each answer, until it
// is done or failed. The server renders the section; this only swaps it in.
(function () {
  "use strict";
  const section = document.getElementById("harness-profiles");
  if (!section) return;

  function inProgress() {
    const body = section.querySelector(".profiles-body");
    return body && body.dataset.inProgress === "1";
  }

  if (!inProgress()) return;
  window.pollStatus(section.dataset.statusUrl, (state) => {
    const body = section.querySelector(".profiles-body");
    const changed = !body || body.dataset.status !== state.status ||
      section.dataset.done !== String(state.profiles_done);
    section.dataset.done = String(state.profiles_done);
    if (changed) section.innerHTML = state.html;
    return state.in_progress;
  });
})();
