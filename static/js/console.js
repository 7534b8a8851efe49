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

// Charts (apps/common/charts.py): each day is a link named by its values. The visible tooltip
// shows those words on hover and focus (the SVG <title>s are then removed, so the browser's
// own tooltip does not show them twice). A chart is one Tab stop: the arrow keys, Home and End
// move between its days, Enter opens the day's runs.
function chartTip(mark) {
  const figure = mark.closest("[data-chart]");
  const tip = figure && figure.querySelector(".chart-tip");
  if (!tip) return;
  tip.textContent = mark.dataset.tip;
  tip.hidden = false;
  const box = figure.getBoundingClientRect();
  const hit = (mark.querySelector(".hit") || mark).getBoundingClientRect();
  const left = Math.min(Math.max(hit.left + hit.width / 2 - box.left - tip.offsetWidth / 2, 0),
    box.width - tip.offsetWidth);
  tip.style.left = `${left}px`;
  tip.style.top = `${Math.max(hit.top - box.top - tip.offsetHeight - 6, 0)}px`;
  figure.querySelectorAll(".mark.active").forEach((other) => other.classList.remove("active"));
  mark.classList.add("active");
}

function chartTipHide(figure) {
  const tip = figure && figure.querySelector(".chart-tip");
  if (tip) tip.hidden = true;
  if (figure) figure.querySelectorAll(".mark.active").forEach((mark) => mark.classList.remove("active"));
}

function chartsPrepare(root) {
  root.querySelectorAll("[data-chart] .mark > title").forEach((title) => title.remove());
}
document.addEventListener("DOMContentLoaded", () => chartsPrepare(document));
document.addEventListener("htmx:afterSettle", (event) => chartsPrepare(event.target));

document.addEventListener("mouseover", (event) => {
  const mark = event.target.closest && event.target.closest("[data-chart] .mark");
  if (mark) chartTip(mark);
});
document.addEventListener("mouseout", (event) => {
  const figure = event.target.closest && event.target.closest("[data-chart]");
  if (figure && !figure.contains(event.relatedTarget)) chartTipHide(figure);
});
document.addEventListener("focusin", (event) => {
  const mark = event.target.closest && event.target.closest("[data-chart] .mark");
  if (mark) chartTip(mark);
});
document.addEventListener("focusout", (event) => {
  const mark = event.target.closest && event.target.closest("[data-chart] .mark");
  if (mark) chartTipHide(mark.closest("[data-chart]"));
});
document.addEventListener("keydown", (event) => {
  const mark = event.target.closest && event.target.closest("[data-chart] .mark");
  if (!mark) return;
  if (event.key === "Escape") { chartTipHide(mark.closest("[data-chart]")); return; }
  const marks = [...mark.parentNode.querySelectorAll(":scope > .mark")];
  const here = marks.indexOf(mark);
  const step = { ArrowRight: here + 1, ArrowDown: here + 1, ArrowLeft: here - 1, ArrowUp: here - 1,
    Home: 0, End: marks.length - 1 }[event.key];
  if (step === undefined) return;
  event.preventDefault();
  const next = marks[Math.min(Math.max(step, 0), marks.length - 1)];
  marks.forEach((other) => other.setAttribute("tabindex", other === next ? "0" : "-1"));
  next.focus();
});

// Phones: the Runs and Conversations filters fold behind a "Filters (n)" button, n the filters
// in use, so the list starts on the first screen (issue 38, defect 9). Wider screens (CSS)
// hide the button and always show the form.
function foldFilters(form) {
  if (form.dataset.folded) return;
  form.dataset.folded = "1";
  const button = document.createElement("button");
  button.type = "button";
  button.className = "btn btn-small filters-toggle";
  button.setAttribute("aria-controls", form.id);
  button.setAttribute("aria-expanded", "false");
  form.classList.add("filters-folded");
  const count = () => {
    const used = Array.from(form.elements).filter(
      (field) => field.name && field.type !== "hidden" && field.type !== "submit" && field.value
    ).length;
    button.textContent = used ? `Filters (${used})` : "Filters";
  };
  count();
  form.addEventListener("change", count);
  form.addEventListener("input", count);
  button.addEventListener("click", () => {
    const open = form.classList.toggle("filters-folded") === false;
    button.setAttribute("aria-expanded", String(open));
  });
  form.before(button);
}
document.querySelectorAll("#run-filters, #conversation-filters").forEach(foldFilters);

// A refused HTMX action (403: the role changed since the page was opened) says why where it
// was clicked: the server's reason goes in a note after the form, not on the next page.
document.addEventListener("htmx:responseError", (event) => {
  const xhr = event.detail.xhr;
  if (!xhr || xhr.status !== 403) return;
  const source = event.detail.elt;
  const anchor = (source && (source.closest("form") || source)) || null;
  if (!anchor) return;
  let note = anchor.nextElementSibling;
  if (!note || !note.classList.contains("inline-error")) {
    note = document.createElement("div");
    note.className = "form-error inline-error";
    note.setAttribute("role", "alert");
    anchor.after(note);
  }
  const type = xhr.getResponseHeader("Content-Type") || "";
  note.textContent = type.startsWith("text/plain") && xhr.responseText
    ? xhr.responseText
    : "Not allowed: only workspace owners can do this.";
});
