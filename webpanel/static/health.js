// The dashboard's health row refreshes itself: every data-every seconds it fetches the
// row again from data-src (an HTML fragment the panel renders, its SVG chart included:
// one chart implementation, webpanel/charts.py) and swaps it in. A file of the panel's
// own, no inline script: the CSP stays default-src 'self'. A failed fetch (the panel
// restarting, the session gone) marks the row stale and tries again later.
(function () {
  "use strict";

  function schedule(row) {
    var every = Number(row.dataset.every) * 1000;
    if (every > 0) {
      window.setTimeout(function () { refresh(row); }, every);
    }
  }

  function refresh(row) {
    fetch(row.dataset.src, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (response) {
        if (!response.ok || response.redirected) {
          throw new Error("health row: HTTP " + response.status);
        }
        return response.text();
      })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("health");
        if (!fresh) {
          throw new Error("health row: not in the answer");
        }
        var adopted = document.importNode(fresh, true);
        row.replaceWith(adopted);
        schedule(adopted);
      })
      .catch(function () {
        row.classList.add("stale");
        schedule(row);
      });
  }

  var row = document.getElementById("health");
  if (row) {
    schedule(row);
  }
})();
