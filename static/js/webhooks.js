// Webhooks page: clicking an open delivery's event again folds its attempt timeline away.
document.addEventListener("htmx:beforeRequest", (event) => {
  const link = event.detail.elt;
  if (!link.classList || !link.classList.contains("delivery-toggle")) return;
  const target = event.detail.target;
  if (target && target.innerHTML.trim() !== "") {
    event.preventDefault();
    target.innerHTML = "";
  }
});
