// The login page: a plain form POST (works without script); this only keeps focus on the field.
const field = document.getElementById("token");
if (field) field.focus();
