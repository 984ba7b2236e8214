// Progressive enhancement of the closure form only: the server fills the times in UTC and reads them in
// the zone the form names. This shows the filled-in times in the browser's own zone and names that zone,
// so an operator reads and types local times. Without JavaScript the form simply stays in UTC.
(function () {
  "use strict";
  document.addEventListener("DOMContentLoaded", function () {
    var form = document.getElementById("closure-form");
    var zone = form && form.querySelector("select[name=time_zone]");
    var filled = form ? form.querySelectorAll("input[data-utc]") : [];
    var local = Intl.DateTimeFormat().resolvedOptions().timeZone;
    if (!zone || !filled.length || !local || local === zone.value) return;
    if (!Array.prototype.some.call(zone.options, function (o) { return o.value === local; })) return;
    // sv-SE writes "2026-01-31 14:05:09": the datetime-local value once the space is a "T".
    var wall = new Intl.DateTimeFormat("sv-SE", {
      timeZone: local, year: "numeric", month: "2-digit", day: "2-digit",
      hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23"
    });
    Array.prototype.forEach.call(filled, function (input) {
      var at = new Date(input.getAttribute("data-utc"));
      if (!isNaN(at)) input.value = wall.format(at).replace(" ", "T");
    });
    zone.value = local;
  });
})();
