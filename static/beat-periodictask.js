/* django-celery-beat's periodic task form: the chosen crontab's reading beside its help text.
   The package does this in an inline script, which the Content-Security-Policy refuses to run. */
(function () {
  "use strict";
  var data = document.getElementById("readable-crontabs");
  var select = document.getElementById("id_crontab");
  var help = document.querySelector(".field-crontab .help");
  var translation = document.querySelector(".field-crontab_translation");
  if (translation) {
    translation.style.display = "none"; // CSSOM, which the policy allows (a style="" attribute it would not)
  }
  if (!data || !select || !help) {
    return;
  }
  var readable = JSON.parse(data.textContent);
  var original = help.textContent;
  select.addEventListener("change", function () {
    var reading = readable[select.value];
    help.textContent = reading ? original + " Translation: " + reading : original;
  });
})();
