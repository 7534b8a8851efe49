// "Expand all" on a transcript: opens or closes every <details> (reasoning, tool calls, JSON).
document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-toggle-details]");
  if (!button) return;
  const root = document.querySelector(button.dataset.toggleDetails);
  if (!root) return;
  const items = root.querySelectorAll("details");
  const open = button.dataset.open !== "true";
  items.forEach((item) => { item.open = open; });
  button.dataset.open = String(open);
  button.textContent = open ? "Collapse all" : "Expand all";
});
