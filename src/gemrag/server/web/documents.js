// The gemrag web page, part 2 of 5: the key, the namespace, the documents (list with build states, upload, paste,
// delete).
"use strict";
(() => {
  const { $, KEY, NS, state, ApiError, api, nsPath, showError, clearError, status, el, stateBadge } = window.gemrag;

  // -- key and namespace -----------------------------------------------------------------------------------
  function showKeyState() {
    $("key-state").textContent = sessionStorage.getItem(KEY)
      ? "A key is set for this browser session."
      : "No key: the server must be open.";
  }

  $("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const key = $("key").value.trim();
    if (key) sessionStorage.setItem(KEY, key);
    $("key").value = "";
    showKeyState();
    switchNamespace(state.ns);
  });

  $("key-forget").addEventListener("click", () => {
    sessionStorage.removeItem(KEY);
    showKeyState();
    switchNamespace(state.ns);
  });

  $("ns-form").addEventListener("submit", (event) => {
    event.preventDefault();
    if (!$("ns").checkValidity()) {
      $("ns").reportValidity();
      return;
    }
    switchNamespace($("ns").value.trim());
  });

  async function loadNamespaces() {
    try {
      const { namespaces } = await api("/namespaces");
      $("ns-list").replaceChildren(...namespaces.map((name) => el("option", { value: name })));
      return namespaces;
    } catch (error) {
      $("ns-list").replaceChildren();
      showError(error);
      return null;
    }
  }

  function forgetShown() {
    // nothing of the previous namespace (or key) stays on screen
    state.strategies = [];
    state.hits = [];
    state.texts.clear();
    state.lastQuestion = "";
    $("documents").tBodies[0].replaceChildren();
    $("documents-empty").hidden = false;
    $("strategy-states").replaceChildren();
    $("index-strategies").replaceChildren();
    $("plan").replaceChildren();
    $("job").replaceChildren();
    $("answer-text").replaceChildren();
    $("answer-meta").textContent = "";
    $("hits").replaceChildren();
    $("reader").hidden = true;
    $("reader-text").replaceChildren();
    $("graph-frame").srcdoc = "";
    fillStrategySelects();
  }

  async function switchNamespace(name) {
    if (state.ask) state.ask.abort();
    window.gemrag.stopPolling();
    clearError();
    state.ns = name;
    $("ns").value = name;
    if (name) sessionStorage.setItem(NS, name);
    forgetShown();
    const names = await loadNamespaces();
    if (!state.ns && names && names.length) {
      state.ns = names[0];
      $("ns").value = state.ns;
    }
    if (state.ns) await loadDocuments();
    else status("Choose a namespace, or type a new name and add documents to it.");
  }

  // -- documents -------------------------------------------------------------------------------------------
  function fillStrategySelects() {
    const built = state.strategies.filter((s) => s.state !== "never built").map((s) => s.strategy);
    for (const id of ["ask-strategy", "graph-strategy"]) {
      const select = $(id);
      const keep = select.value;
      select.replaceChildren(
        el("option", { value: "", text: "the server's default" }),
        ...built.map((name) => el("option", { value: name, text: name })),
      );
      if (built.includes(keep)) select.value = keep;
      else if (built.length) select.value = built[0];
    }
    const boxes = $("index-strategies");
    const checked = new Set(Array.from(boxes.querySelectorAll("input:checked")).map((box) => box.value));
    boxes.replaceChildren(
      ...state.strategies.map((s) =>
        el(
          "label",
          {},
          el("input", { type: "checkbox", name: "strategy", value: s.strategy, checked: checked.has(s.strategy) }),
          ` ${s.strategy} `,
          stateBadge(s.strategy, s.state),
          el("span", { class: "hint", text: ` ${s.describe}` }),
        ),
      ),
    );
  }

  async function loadDocuments() {
    const ns = state.ns;
    let overview;
    try {
      overview = await api(nsPath("/build-state"));
    } catch (error) {
      if (ns !== state.ns) return;
      if (error instanceof ApiError && error.status === 404) {
        status(`Namespace "${ns}" holds no memory yet: add documents to create it.`);
      } else {
        showError(error);
      }
      return;
    }
    if (ns !== state.ns) return;
    state.strategies = overview.strategies;
    fillStrategySelects();
    const active = overview.strategies.filter((s) => s.state !== "never built");
    $("strategy-states").replaceChildren(
      el("span", { class: "hint", text: "Strategies: " }),
      ...(active.length ? active.map((s) => stateBadge(s.strategy, s.state)) : [el("span", { text: "none built yet." })]),
    );
    const rows = overview.documents.map((doc) =>
      el(
        "tr",
        { "data-doc": doc.id },
        el("td", { text: doc.title }),
        el("td", { text: doc.source }),
        el("td", { class: "num", text: doc.version }),
        el("td", { class: "num", text: doc.chunked ? doc.chunks : "not chunked yet" }),
        el(
          "td",
          {},
          active.length
            ? active.map((s) => stateBadge(s.strategy, doc.strategies[s.strategy] || "never built"))
            : "never built",
        ),
        el(
          "td",
          {},
          el("button", { type: "button", "aria-label": `Delete ${doc.title}`, onclick: () => deleteDocument(doc), text: "Delete" }),
        ),
      ),
    );
    $("documents").tBodies[0].replaceChildren(...rows);
    $("documents-empty").hidden = rows.length > 0;
    status(`Namespace "${ns}": ${rows.length} document${rows.length === 1 ? "" : "s"}.`);
  }

  async function deleteDocument(doc) {
    clearError();
    const purge = $("purge").checked;
    let done = "";
    try {
      const report = await api(nsPath(`/documents/${doc.id}${purge ? "?purge=true" : ""}`), { method: "DELETE" });
      done =
        `Deleted "${doc.title}": ${report.chunks} chunks, ${report.derived_nodes} derived nodes` +
        (report.purge ? `; purged (${report.purge.erasure.complete ? "complete" : report.purge.erasure.detail})` : "") +
        ".";
      state.texts.clear();
    } catch (error) {
      showError(error);
    }
    await loadDocuments();
    if (done) status(done);
  }

  function added(report) {
    const counts = {};
    for (const d of report.documents) counts[d.status] = (counts[d.status] || 0) + 1;
    return Object.entries(counts)
      .map(([what, n]) => `${n} ${what}`)
      .join(", ");
  }

  async function afterAdding(report) {
    state.texts.clear();
    await loadNamespaces();
    await loadDocuments();
    status(`Documents: ${added(report)}. Index them to make them searchable.`);
  }

  $("upload-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    clearError();
    if (!state.ns) return showError("Choose a namespace first.");
    const form = new FormData();
    for (const file of $("files").files) form.append("files", file, file.name);
    try {
      await afterAdding(await api(nsPath("/documents/upload"), { method: "POST", form }));
      $("files").value = "";
    } catch (error) {
      showError(error);
    }
  });

  $("paste-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    clearError();
    if (!state.ns) return showError("Choose a namespace first.");
    const title = $("paste-title").value.trim();
    const doc = { title, text: $("paste-text").value, source: `web:${title}` };
    try {
      await afterAdding(await api(nsPath("/documents"), { method: "POST", json: { documents: [doc] } }));
      $("paste-text").value = "";
      $("paste-title").value = "";
    } catch (error) {
      showError(error);
    }
  });

  Object.assign(window.gemrag, { switchNamespace, loadDocuments, showKeyState });
})();
