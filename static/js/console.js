// Small behaviours shared by console pages. No framework; htmx does the fetching.
document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const source = document.querySelector(button.dataset.copy);
  if (!source) return;
  navigator.clipboard?.writeText(source.textContent.trim()).then(() => {
    const label = button.textContent;
    button.textContent = "Copied";
    setTimeout(() => { button.textContent = label; }, 1500);
  });
});

// The Agent switcher switches on an explicit choice: a pick with the mouse (or from the opened
// list), or Enter. Arrow keys on the closed select change its value and fire "change" at every
// press; those only move the choice and show the Switch button.
const SWITCHER = "select[data-submit-on-change]";
const MOVE_KEYS = /^(Arrow|Page|Home$|End$)|^.$/;

document.addEventListener("keydown", (event) => {
  const select = event.target.closest && event.target.closest(SWITCHER);
  if (!select) return;
  if (event.key === "Enter") {
    event.preventDefault();
    if (select.value !== select.dataset.current) select.form.requestSubmit();
  } else if (MOVE_KEYS.test(event.key)) {
    select.dataset.keyboard = "1";
  }
});

document.addEventListener("pointerdown", (event) => {
  const select = event.target.closest && event.target.closest(SWITCHER);
  if (select) delete select.dataset.keyboard;
});

document.addEventListener("change", (event) => {
  const select = event.target.closest(SWITCHER);
  if (!select || !select.form) return;
  const button = select.form.querySelector(".switch-button");
  if (select.dataset.keyboard) {
    if (button) button.hidden = select.value === select.dataset.current;
    return;
  }
  select.form.requestSubmit();
});

// Narrow screens: the menu button shows and hides the navigation.
document.addEventListener("click", (event) => {
  const button = event.target.closest("#menu-button");
  if (!button) return;
  const sidebar = document.getElementById("sidebar");
  const open = !sidebar.classList.contains("open");
  sidebar.classList.toggle("open", open);
  button.setAttribute("aria-expanded", String(open));
});

// Escape closes the open phone menu and gives the focus back to its button.
document.addEventListener("keydown", (event) => {
  if (event.key !== "Escape") return;
  const sidebar = document.getElementById("sidebar");
  const button = document.getElementById("menu-button");
  if (!sidebar || !button || !sidebar.classList.contains("open")) return;
  sidebar.classList.remove("open");
  button.setAttribute("aria-expanded", "false");
  button.focus();
});

// Forms that ask before a destructive post when htmx is not there to do it (hx-confirm).
document.addEventListener("submit", (event) => {
  const form = event.target;
  const message = form.dataset && form.dataset.confirm;
  if (!message) return;
  if (window.htmx && form.hasAttribute("hx-confirm")) return; // htmx asks instead
  if (!window.confirm(message)) event.preventDefault();
});

// Bulk selection: a header box ticks every row box of its list; the bar counts the ticked rows.
// Row boxes name their bulk form with form="..." (each row has forms of its own).
document.addEventListener("change", (event) => {
  const box = event.target;
  if (!(box instanceof HTMLInputElement) || box.type !== "checkbox") return;
  const formId = box.dataset.selectAll || (box.name === "ids" && box.getAttribute("form"));
  if (!formId) return;
  const rows = document.querySelectorAll(`input[name="ids"][form="${formId}"]`);
  if (box.dataset.selectAll) rows.forEach((row) => { row.checked = box.checked; });
  const ticked = Array.from(rows).filter((row) => row.checked).length;
  const count = document.querySelector(`#${formId} [data-bulk-count]`);
  if (count) count.textContent = ticked ? `${ticked} selected` : "None selected";
});
