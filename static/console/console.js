// Progressive enhancement only: the server already rendered every countdown as text.
// This ticks them so a page left open stays truthful; nothing depends on it.
(function () {
  "use strict";
  var URGENT = 5 * 60, SOON = 60 * 60;

  function duration(s) {
    s = Math.max(0, Math.floor(s));
    if (s < 60) return s + " s";
    if (s < 3600) return Math.floor(s / 60) + " min";
    if (s < 86400) {
      var h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
      return m ? h + " h " + m + " min" : h + " h";
    }
    var d = Math.floor(s / 86400), hh = Math.floor((s % 86400) / 3600);
    return hh ? d + " d " + hh + " h" : d + " d";
  }

  function tick() {
    var now = Date.now();
    document.querySelectorAll("time[data-deadline]").forEach(function (el) {
      var at = Date.parse(el.getAttribute("data-deadline"));
      if (isNaN(at)) return;
      var left = (at - now) / 1000;
      var urgency = left <= 0 ? "expired" : left < URGENT ? "urgent" : left < SOON ? "soon" : "later";
      el.textContent = left <= 0 ? "expired" : "in " + duration(left);
      el.className = "countdown urgency-" + urgency;
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    tick();
    window.setInterval(tick, 1000);
  });
})();
