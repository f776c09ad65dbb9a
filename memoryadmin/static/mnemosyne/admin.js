/* Mnemosyne web admin: the little behaviour that pages need, in a file of its own (the
   Content-Security-Policy allows no inline script). */
(function () {
  "use strict";

  // Loaded in <head>, before the body is parsed: the class lets the style sheet fold the
  // navigation of a narrow screen under its button without a flash (no script: it stays open).
  document.documentElement.classList.add("js");

  // Times on the pages are shown in the browser's time zone: the server reads this cookie.
  try {
    var zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    if (zone && document.cookie.indexOf("mnemosyne_tz=" + zone) === -1) {
      document.cookie = "mnemosyne_tz=" + zone + "; path=/; max-age=31536000; SameSite=Lax";
    }
  } catch (e) {
    // no Intl or no cookies: times stay in UTC, and the pages say so
  }

  document.addEventListener("change", function (event) {
    // A select that submits its form when changed (the language picker).
    var target = event.target;
    if (target.matches && target.matches("select[data-submit-on-change]")) {
      target.form.submit();
    }
  });

  document.addEventListener("submit", function (event) {
    // Destructive actions ask first: <form data-confirm="...">. A form with
    // data-confirm-typed="WORD" also needs WORD typed into its field named "confirm".
    var form = event.target;
    var question = form.getAttribute && form.getAttribute("data-confirm");
    if (!question) {
      var button = event.submitter;
      question = button && button.getAttribute("data-confirm");
    }
    if (question && !window.confirm(question)) {
      event.preventDefault();
      event.stopImmediatePropagation();
    }
  }, true);

  document.addEventListener("click", function (event) {
    // "Select all" of a bulk form: <input type=checkbox data-select-all="name">.
    var box = event.target;
    if (box.matches && box.matches("input[data-select-all]")) {
      var name = box.getAttribute("data-select-all");
      document.querySelectorAll('input[type=checkbox][name="' + name + '"]').forEach(
        function (other) { other.checked = box.checked; }
      );
    }
  });

  document.addEventListener("click", function (event) {
    // The navigation's button on a narrow screen: shows or hides the page links.
    var button = event.target.closest && event.target.closest("button.nav-toggle");
    if (!button) {
      return;
    }
    var open = button.getAttribute("aria-expanded") !== "true";
    button.setAttribute("aria-expanded", open ? "true" : "false");
    button.closest("nav").classList.toggle("open", open);
  });

  // -- copy buttons: <button data-copy="ID"> copies the text of the element with that id ----

  function selectText(element) {
    var range = document.createRange();
    range.selectNodeContents(element);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }

  function copyBySelection(element) {
    // Without the Clipboard API (a page served over plain http from another host, an older
    // browser): select the text and ask for the browser's own copy. The text stays selected,
    // so Ctrl+C still works if the browser refused.
    selectText(element);
    try {
      return document.execCommand("copy");
    } catch (error) {
      return false;
    }
  }

  function say(button, ok) {
    var note = button.parentNode.querySelector(".copy-note");
    if (!note) {
      return;
    }
    note.textContent = note.getAttribute(ok ? "data-copied" : "data-copy-failed");
    window.clearTimeout(note.clearing);
    note.clearing = window.setTimeout(function () { note.textContent = ""; }, 6000);
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("button[data-copy]");
    if (!button) {
      return;
    }
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source) {
      return;
    }
    var text = source.textContent.trim();
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(
        function () { say(button, true); },
        function () { say(button, copyBySelection(source)); }
      );
    } else {
      say(button, copyBySelection(source));
    }
  });

  // -- tables wider than the screen scroll sideways in their frame (<div class="scroll">) ----

  function fitScrollers() {
    // A frame that scrolls takes the keyboard's focus, so it can be scrolled without a mouse;
    // one that does not scroll is no extra stop for the Tab key.
    document.querySelectorAll("div.scroll").forEach(function (frame) {
      if (frame.scrollWidth > frame.clientWidth + 1) {
        frame.setAttribute("tabindex", "0");
      } else {
        frame.removeAttribute("tabindex");
      }
    });
  }

  function labelStackedCells() {
    // <table class="stack"> becomes one card per row on a narrow screen (admin.css): each cell
    // takes its column's heading as data-label, shown before it (one source: the <th>).
    document.querySelectorAll("table.stack").forEach(function (table) {
      var headings = [];
      table.querySelectorAll("thead th").forEach(function (th) {
        // <th data-no-label>: a column of buttons, named for screen readers only.
        var heading = th.hasAttribute("data-no-label") ? "" : th.textContent.trim();
        for (var n = 0; n < th.colSpan; n++) {
          headings.push(heading);
        }
      });
      table.querySelectorAll("tbody tr").forEach(function (row) {
        var column = 0;
        Array.prototype.forEach.call(row.cells, function (cell) {
          var heading = cell.colSpan === 1 ? headings[column] : "";
          if (heading) {
            cell.setAttribute("data-label", heading);
          }
          column += cell.colSpan;
        });
      });
    });
  }

  function onLoad() {
    labelStackedCells();
    fitScrollers();
  }

  document.addEventListener("DOMContentLoaded", onLoad);
  document.addEventListener("htmx:afterSettle", onLoad);
  document.addEventListener("toggle", fitScrollers, true); // a <details> opened
  window.addEventListener("resize", fitScrollers);
})();
