// Knowledge page: drag-and-drop or pick several files; each is sent with XMLHttpRequest so
// its own progress bar moves; errors (413/415/409) show next to the file. When an upload
// finishes, the document table reloads through htmx ("knowledge-changed").
(function () {
  "use strict";

  function csrfToken(form) {
    const input = form.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  function row(file) {
    const item = document.createElement("li");
    item.className = "upload-item";
    const name = document.createElement("span");
    name.className = "upload-name";
    name.textContent = file.name;
    const bar = document.createElement("div");
    bar.className = "progress";
    bar.setAttribute("role", "progressbar");
    bar.setAttribute("aria-label", "Upload of " + file.name);
    bar.setAttribute("aria-valuemin", "0");
    bar.setAttribute("aria-valuemax", "100");
    const fill = document.createElement("span");
    bar.appendChild(fill);
    const message = document.createElement("span");
    message.className = "upload-message";
    message.textContent = "Waiting…";
    item.append(name, bar, message);
    return { item, bar, fill, message };
  }

  function setProgress(view, percent) {
    view.fill.style.width = percent + "%";
    view.bar.setAttribute("aria-valuenow", String(percent));
  }

  function upload(form, file, view) {
    return new Promise((resolve) => {
      const xhr = new XMLHttpRequest();
      const data = new FormData();
      data.append("file", file, file.name);
      xhr.open("POST", form.dataset.uploadUrl);
      xhr.setRequestHeader("X-CSRFToken", csrfToken(form));
      xhr.setRequestHeader("Accept", "application/json");
      xhr.upload.addEventListener("progress", (event) => {
        if (event.lengthComputable) {
          setProgress(view, Math.round((event.loaded / event.total) * 100));
          view.message.textContent = "Uploading…";
        }
      });
      xhr.addEventListener("load", () => {
        let body = {};
        try { body = JSON.parse(xhr.responseText); } catch (error) { body = {}; }
        if (xhr.status === 201) {
          setProgress(view, 100);
          view.item.classList.add("done");
          view.item.dataset.documentId = body.id || "";
          view.message.textContent = "Uploaded; extracting and indexing…";
        } else {
          view.item.classList.add("error");
          view.message.textContent = body.message || ("Upload failed (" + xhr.status + ").");
        }
        resolve(xhr.status === 201);
      });
      xhr.addEventListener("error", () => {
        view.item.classList.add("error");
        view.message.textContent = "The upload was interrupted; try again.";
        resolve(false);
      });
      xhr.send(data);
    });
  }

  async function uploadAll(form, files) {
    const list = document.getElementById("upload-list");
    const jobs = Array.from(files).map((file) => {
      const view = row(file);
      list.appendChild(view.item);
      return () => upload(form, file, view);
    });
    // Two at a time: quick for several small files, gentle on the server for big ones.
    let index = 0;
    async function next() {
      while (index < jobs.length) {
        const job = jobs[index++];
        if (await job() && window.htmx) {
          window.htmx.trigger(document.body, "knowledge-changed");
        }
      }
    }
    await Promise.all([next(), next()]);
  }

  // An uploaded file's line follows its document: the table's rows poll until they settle,
  // and each time htmx brings a row in, the matching upload line takes its final state.
  function followDocuments(root) {
    const items = document.querySelectorAll("#upload-list .upload-item[data-document-id]");
    items.forEach((item) => {
      const id = item.dataset.documentId;
      const rowId = "document-row-" + id;
      const row = root.id === rowId ? root : root.querySelector("#" + CSS.escape(rowId));
      if (!row) return;
      const status = row.querySelector("[data-status]");
      const message = item.querySelector(".upload-message");
      if (!status || !message) return;
      if (status.dataset.status === "ready") {
        item.classList.add("ready");
        message.textContent = "Ready: indexed and searchable.";
      } else if (status.dataset.status === "failed") {
        item.classList.remove("done");
        item.classList.add("error");
        const error = row.querySelector(".doc-status .field-error");
        message.textContent = "Failed: " + (error ? error.textContent.trim() : "the file could not be read.");
      }
    });
  }

  function init() {
    document.body.addEventListener("htmx:load", (event) => followDocuments(event.detail.elt));
    const form = document.getElementById("upload-form");
    const input = document.getElementById("upload-input");
    if (!form || !input) return;
    input.addEventListener("change", () => {
      if (input.files.length) uploadAll(form, input.files);
      input.value = "";
    });
    ["dragenter", "dragover"].forEach((type) =>
      form.addEventListener(type, (event) => {
        event.preventDefault();
        form.classList.add("dragover");
      })
    );
    ["dragleave", "drop"].forEach((type) =>
      form.addEventListener(type, () => form.classList.remove("dragover"))
    );
    form.addEventListener("drop", (event) => {
      event.preventDefault();
      if (event.dataTransfer && event.dataTransfer.files.length) {
        uploadAll(form, event.dataTransfer.files);
      }
    });
    form.addEventListener("click", (event) => {
      if (event.target === form) input.click();
    });
    // A real button, reachable with Tab and pressed with Enter or Space, opens the picker.
    const choose = document.getElementById("upload-choose");
    if (choose) choose.addEventListener("click", () => input.click());
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
