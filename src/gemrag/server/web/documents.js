// The gemrag web page, part 2 of 5: the key, the namespace, the documents (list with build states, upload, paste,
// delete).
"use strict";
(() => {
  const { $, KEY, NS, state, ApiError, api, nsPath, showError, clearError, status, el, stateBadge, plural, strategyNote } =
    window.gemrag;

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
    state.nsReady = false;
    state.defaultStrategy = null;
    $("plan").replaceChildren();
    $("job").replaceChildren();
    window.gemrag.forgetJobs();
    window.gemrag.forgetAnswer();
    window.gemrag.forgetChat();
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
    // the table says it is loading (aria-busy) until this switch is done: assistive technology waits, and so can a
    // script that must not act on the rows of the namespace shown before
    const table = $("documents");
    const turn = (state.switches = (state.switches || 0) + 1);
    table.setAttribute("aria-busy", "true");
    try {
      const names = await loadNamespaces();
      if (!state.ns && names && names.length) {
        state.ns = names[0];
        $("ns").value = state.ns;
      }
      if (state.ns) {
        await loadDocuments();
        if (state.nsReady) await window.gemrag.refreshJobs();
      } else status("Choose a namespace, or type a new name and add documents to it.");
    } finally {
      if (turn === state.switches) table.setAttribute("aria-busy", "false"); // the latest switch ends it
    }
  }

  // -- documents -------------------------------------------------------------------------------------------
  function fillStrategySelects() {
    const built = state.strategies.filter((s) => s.state !== "never built").map((s) => s.strategy);
    const fallback = state.defaultStrategy ? `the server's default (${state.defaultStrategy})` : "the server's default";
    for (const id of ["ask-strategy", "graph-strategy", "chat-strategy"]) {
      const select = $(id);
      const keep = select.value;
      select.replaceChildren(
        el("option", { value: "", text: fallback }),
        ...built.map((name) => el("option", { value: name, text: name })),
      );
      if (built.includes(keep)) select.value = keep;
      else if (built.length) select.value = built[0];
    }
    const boxes = $("index-strategies");
    const checked = new Set(Array.from(boxes.querySelectorAll("input:checked")).map((box) => box.value));
    // one line each: the name (the default marked), its build state, what it is for
    boxes.replaceChildren(
      ...state.strategies.map((s) =>
        el(
          "label",
          { class: "choice", "data-strategy": s.strategy },
          el("input", { type: "checkbox", name: "strategy", value: s.strategy, checked: checked.has(s.strategy) }),
          ` ${s.strategy} `,
          s.strategy === state.defaultStrategy ? el("span", { class: "default-mark", text: "default " }) : null,
          el("span", { class: `state state-${s.state === "never built" ? "never" : s.state}`, "data-state": s.state,
            text: s.describe }),
          el("span", { class: "note", text: strategyNote(s.strategy) }),
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
    state.nsReady = true;
    state.strategies = overview.strategies;
    state.defaultStrategy = overview.default || null;
    window.gemrag.clearPlan(); // the documents may have changed: a plan made before is stale
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
        el("td", { class: "title", text: doc.title }),
        el("td", { class: "source", text: doc.source }),
        el("td", { class: "num", "data-label": "Version ", text: doc.version }),
        el("td", { class: "num", "data-label": "Chunks ", text: doc.chunked ? doc.chunks : "not chunked yet" }),
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

  // a delete is confirmed first in a dialog of the page; with purge it says that nothing can bring the text back
  function confirmDelete(doc, purge) {
    const dialog = $("confirm");
    $("confirm-text").textContent =
      `Delete "${doc.title}" with its ${plural(doc.chunks, "chunk")} and everything built from them? ` +
      (purge
        ? "Purge is on: every copy of its text (caches, kept versions, chat exchanges quoting it) is erased too. " +
          "This cannot be undone."
        : "Copies of its text in caches stay until a purge; add it again to undo.");
    $("confirm-ok").textContent = purge ? "Delete and purge" : "Delete";
    return new Promise((resolve) => {
      dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
      dialog.returnValue = "";
      dialog.showModal();
      $("confirm-cancel").focus();
    });
  }

  async function deleteDocument(doc) {
    clearError();
    const purge = $("purge").checked;
    if (!(await confirmDelete(doc, purge))) return status(`"${doc.title}" kept.`);
    let done = "";
    try {
      const report = await api(nsPath(`/documents/${doc.id}${purge ? "?purge=true" : ""}`), { method: "DELETE" });
      done =
        `Deleted "${doc.title}": ${plural(report.chunks, "chunk")}, ${plural(report.derived_nodes, "derived node")}` +
        (report.purge ? `; purged (${report.purge.erasure.complete ? "complete" : report.purge.erasure.detail})` : "") +
        ".";
      state.texts.clear();
    } catch (error) {
      showError(error);
    }
    await loadDocuments();
    if (done) status(done);
  }

  // one wording for what an add did to each document
  const WORDS = { added: "added", updated: "updated (a new version)", unchanged: "unchanged",
    same: "unchanged (the same text is already stored)", moved: "moved" };

  function added(report) {
    const counts = {};
    for (const d of report.documents) counts[WORDS[d.status] || d.status] = (counts[WORDS[d.status] || d.status] || 0) + 1;
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
