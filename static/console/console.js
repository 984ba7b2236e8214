// Progressive enhancement only: the server already rendered every countdown and time as text.
// This ticks the countdowns so a page left open stays truthful, and writes each time in the
// viewer's own zone (the UTC text stays in its title); nothing depends on it.
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

  // The server's format ("30 Nov 2026, 17:51:50 UTC"), in the browser's zone, named as its locale names it.
  var NUMBERS = { day: "numeric", month: "short", year: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23" };

  function parts(locale, options, at) {
    var found = {};
    new Intl.DateTimeFormat(locale, options).formatToParts(at).forEach(function (p) { found[p.type] = p.value; });
    return found;
  }

  function localTimes() {
    if (!window.Intl || !Intl.DateTimeFormat.prototype.formatToParts) return;
    document.querySelectorAll("time.moment[datetime]").forEach(function (el) {
      var at = new Date(el.getAttribute("datetime"));
      if (isNaN(at.getTime()) || el.hasAttribute("data-utc")) return;
      var p = parts("en-GB", NUMBERS, at);
      var zone = parts(undefined, { timeZoneName: "short" }, at).timeZoneName || "";
      var local = p.day + " " + p.month + " " + p.year + ", " + p.hour + ":" + p.minute + ":" + p.second + " " + zone;
      var utc = el.textContent;
      el.setAttribute("data-utc", utc);
      el.title = el.title ? utc + " · " + el.title : utc;
      el.textContent = local;
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    localTimes();
    tick();
    window.setInterval(tick, 1000);
  });
})();
