/* Mnemosyne web admin: the little behaviour that pages need, in a file of its own (the
   Content-Security-Policy allows no inline script). */
(function () {
  "use strict";

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
})();
