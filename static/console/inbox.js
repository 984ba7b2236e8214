// The inbox's keyboard and selection (docs/console.md, "Deciding several at once"). Progressive enhancement only:
// without JavaScript the checkboxes and the two buttons post the same form, and no shortcut exists.
// No key does anything while a text field, a select or a textarea has the focus, nor with Ctrl, Alt or Meta held,
// so typing a reason (or using the browser's own shortcuts) is never taken over. No key decides on its own:
// `a` and `d` only select and move the focus to the button or the reason; Enter on the button decides.
(function () {
  "use strict";

  var TYPING = /^(text|search|email|number|password|url|tel|date|datetime-local|month|week|time)$/;

  function typing(el) {
    if (!el || el.isContentEditable) return !!el;
    if (el.tagName === "TEXTAREA" || el.tagName === "SELECT") return true;
    return el.tagName === "INPUT" && TYPING.test(el.type || "text");
  }

  document.addEventListener("DOMContentLoaded", function () {
    var form = document.getElementById("bulk-form");
    if (!form) return;
    var rows = Array.prototype.slice.call(form.querySelectorAll("tbody tr[data-approval]"));
    var count = document.getElementById("bulk-count");
    var reason = form.querySelector("textarea[name=reason]");
    var approve = document.getElementById("bulk-approve");
    var deny = document.getElementById("bulk-deny");
    var all = document.getElementById("select-all");
    var legend = document.getElementById("shortcuts");
    var current = -1;

    function box(row) { return row.querySelector("input[name=approval]"); }
    function boxes() { return rows.map(box).filter(Boolean); }
    function chosen() { return boxes().filter(function (b) { return b.checked; }); }

    function update() {
      var n = chosen().length, total = boxes().length;
      count.textContent = n
        ? n + " selected. Approve them, or deny them with one reason."
        : "Select approvals to decide several at once.";
      approve.textContent = n ? "Approve " + n + " selected" : "Approve selected";
      deny.textContent = n ? "Deny " + n + " selected" : "Deny selected";
      approve.disabled = deny.disabled = n === 0;
      if (all) {
        all.checked = n > 0 && n === total;
        all.indeterminate = n > 0 && n < total;
      }
    }

    function point(i) {
      if (!rows.length) return;
      current = Math.max(0, Math.min(rows.length - 1, i));
      rows.forEach(function (row, j) { row.classList.toggle("is-current", j === current); });
      var link = rows[current].querySelector("a.row-link");
      link.focus();
      rows[current].scrollIntoView({ block: "nearest" });
    }

    // Nothing selected: `a` and `d` act on the approval the keyboard is on.
    function selectCurrentIfNone() {
      if (chosen().length || current < 0) return;
      var b = box(rows[current]);
      if (b) { b.checked = true; update(); }
    }

    rows.forEach(function (row, j) {
      row.addEventListener("focusin", function () {
        current = j;
        rows.forEach(function (r, k) { r.classList.toggle("is-current", k === j); });
      });
    });
    form.addEventListener("change", function (e) {
      if (e.target === all) boxes().forEach(function (b) { b.checked = all.checked; });
      update();
    });
    form.addEventListener("submit", function (e) {
      if (e.submitter === deny && !reason.value.trim()) {
        e.preventDefault();
        count.textContent = "A denial needs a reason: type it, then deny.";
        reason.focus();
      }
    });
    reason.addEventListener("keydown", function (e) {
      if (e.key === "Escape") { e.preventDefault(); point(current < 0 ? 0 : current); }
    });

    document.addEventListener("keydown", function (e) {
      if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
      var onRow = current >= 0 && rows[current].contains(e.target);
      switch (e.key) {
        case "j": point(current + 1); break;
        case "k": point(current < 0 ? 0 : current - 1); break;
        case "x":
          if (current < 0) return;
          var b = box(rows[current]);
          if (!b) return;
          b.checked = !b.checked;
          update();
          break;
        case "o":
          if (current < 0) return;
          rows[current].querySelector("a.row-link").click();
          break;
        case "Enter":
          // On a link or a button Enter does what it always does; elsewhere it opens the current approval.
          if (current < 0 || (e.target.closest && e.target.closest("a, button, input")) || onRow) return;
          rows[current].querySelector("a.row-link").click();
          break;
        case "a":
          selectCurrentIfNone();
          if (!chosen().length) return;
          approve.focus();
          count.textContent = chosen().length + " selected. Press Enter to approve them.";
          break;
        case "d":
          selectCurrentIfNone();
          if (!chosen().length) return;
          reason.focus();
          count.textContent = chosen().length + " selected. Type the reason, then Tab to Deny and press Enter.";
          break;
        default:
          return;
      }
      e.preventDefault();
    });

    if (all) all.closest("label").hidden = false;
    if (legend) legend.hidden = false;
    update();
  });
})();
