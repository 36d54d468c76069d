/* OmniRoute Ladder dashboard: pause htmx polling while the tab is hidden, catch up when it shows.
   Polled elements carry data-poll and hx-trigger="every …, ladder-visible". */
(function () {
  "use strict";
  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail && event.detail.elt;
    if (document.hidden && elt && elt.hasAttribute && elt.hasAttribute("data-poll")) {
      event.preventDefault();
    }
  });
  document.addEventListener("visibilitychange", function () {
    if (document.hidden || !window.htmx) {
      return;
    }
    document.querySelectorAll("[data-poll]").forEach(function (elt) {
      window.htmx.trigger(elt, "ladder-visible");
    });
  });
})();
