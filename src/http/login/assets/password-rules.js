// Shows, while typing, which of the password rules (listed by the server in #password-rules) the new password meets.
// The server enforces them; this only helps.
(() => {
  const list = document.getElementById("password-rules");
  const input = document.getElementById(list ? list.dataset.for || "" : "");
  if (!list || !input) return;
  const tests = {
    length: (v) => v.length >= Number(list.dataset.minLength || 0),
    uppercase: (v) => /\p{Lu}/u.test(v),
    lowercase: (v) => /\p{Ll}/u.test(v),
    number: (v) => /\p{Nd}/u.test(v),
    symbol: (v) => /[^\p{L}\p{Nd}]/u.test(v),
  };
  const update = () => {
    for (const item of list.querySelectorAll("li[data-rule]")) {
      const test = tests[item.dataset.rule];
      item.classList.toggle("met", Boolean(test?.(input.value)));
    }
  };
  input.addEventListener("input", update);
  update();
})();
