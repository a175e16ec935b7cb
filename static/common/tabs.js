// Tabs with the WAI-ARIA keyboard pattern: arrows, Home and End move between tabs.
// Without JavaScript every panel is shown, one after another. A URL ending in
// #lang-<language> opens that tab, and choosing a tab updates the URL, so a tab can be
// linked to.
(function () {
  "use strict";
  function setup(root) {
    const tabs = Array.from(root.querySelectorAll('[role="tab"]'));
    const panels = tabs.map((tab) => document.getElementById(tab.getAttribute("aria-controls")));

    function select(index, focus, remember) {
      tabs.forEach((tab, i) => {
        const selected = i === index;
        tab.setAttribute("aria-selected", selected ? "true" : "false");
        tab.tabIndex = selected ? 0 : -1;
        panels[i].hidden = !selected;
      });
      if (focus) tabs[index].focus();
      if (remember) history.replaceState(null, "", "#" + panels[index].id);
    }

    tabs.forEach((tab, i) => {
      tab.addEventListener("click", () => select(i, false, true));
      tab.addEventListener("keydown", (event) => {
        const last = tabs.length - 1;
        const moves = { ArrowRight: i === last ? 0 : i + 1, ArrowLeft: i === 0 ? last : i - 1, Home: 0, End: last };
        if (event.key in moves) {
          event.preventDefault();
          select(moves[event.key], true, true);
        }
      });
    });
    const wanted = panels.findIndex((panel) => "#" + panel.id === window.location.hash);
    select(wanted >= 0 ? wanted : 0, false, false);
  }
  document.querySelectorAll("[data-tabs]").forEach(setup);
})();
