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

// Selects that submit their form when changed (the Agent switcher), without inline handlers.
document.addEventListener("change", (event) => {
  const select = event.target.closest("select[data-submit-on-change]");
  if (select && select.form) select.form.submit();
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

// Forms that ask before a destructive post when htmx is not there to do it (hx-confirm).
document.addEventListener("submit", (event) => {
  const form = event.target;
  const message = form.dataset && form.dataset.confirm;
  if (!message) return;
  if (window.htmx && form.hasAttribute("hx-confirm")) return; // htmx asks instead
  if (!window.confirm(message)) event.preventDefault();
});
