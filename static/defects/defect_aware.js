// The run page's "Defect-aware scores": while the patched verdicts are being computed,
// follow the status endpoint (common/poll.js) and swap in the block the server draws, until
// the computation is done or failed.
(function () {
  "use strict";
  const section = document.getElementById("defect-aware");
  if (!section) return;
  const current = section.querySelector(".defect-aware");
  if (!current || current.dataset.inProgress !== "1") return;
  window.pollStatus(section.dataset.statusUrl, (state) => {
    const holder = document.createElement("div");
    holder.innerHTML = state.html;
    const fresh = holder.querySelector(".defect-aware");
    const shown = section.querySelector(".defect-aware");
    if (fresh && shown) shown.replaceWith(fresh);
    return state.in_progress;
  });
})();
