// The Datasets page's catalogue: while an import runs, follow its status endpoint
// (common/poll.js) and swap in the state the server draws, until it is done or failed.
(function () {
  "use strict";
  document.querySelectorAll('.catalogue-state[data-in-progress="1"]').forEach((shown) => {
    const key = shown.dataset.key;
    window.pollStatus(shown.dataset.statusUrl, (state) => {
      const holder = document.createElement("div");
      holder.innerHTML = state.html;
      const fresh = holder.querySelector(".catalogue-state");
      const current = document.querySelector(`.catalogue-state[data-key="${CSS.escape(key)}"]`);
      if (fresh && current) current.replaceWith(fresh);
      return state.in_progress;
    });
  });
})();
