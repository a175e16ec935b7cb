// Copy buttons beside abbreviated hashes: the whole value goes to the clipboard.
(function () {
  "use strict";

  function fallbackCopy(text) {
    // The Clipboard API needs a secure context; a plain-HTTP server gets the old way.
    const area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    const done = document.execCommand("copy");
    area.remove();
    return done ? Promise.resolve() : Promise.reject(new Error("copy refused"));
  }

  function copy(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text).catch(() => fallbackCopy(text));
    }
    return fallbackCopy(text);
  }

  document.addEventListener("click", (event) => {
    const button = event.target.closest("button.copy-value");
    if (!button) return;
    copy(button.dataset.copy).then(
      () => { button.textContent = "Copied"; },
      () => { button.textContent = "Select and copy"; },
    );
    setTimeout(() => { button.textContent = "Copy"; }, 2000);
  });
})();
