// Follow a background job from its status endpoint: ask every two seconds, hand each JSON
// answer to `onState`, and go on while it returns true. When the server or the network is
// away for a moment, ask again, less and less often.
(function () {
  "use strict";
  const INTERVAL_MS = 2000;
  const MAX_INTERVAL_MS = 30000;

  window.pollStatus = function (url, onState) {
    let delay = INTERVAL_MS;

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
          if (onState(state)) schedule();
        })
        .catch(() => {
          delay = Math.min(delay * 2, MAX_INTERVAL_MS);
          schedule();
        });
    }

    schedule();
  };
})();
