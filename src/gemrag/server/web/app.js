// The gemrag web page: plain JavaScript over the JSON API under /v1 of the same server (no framework, no build).
// The API key lives in sessionStorage (this browser tab's session) and goes out as "Authorization: Bearer KEY".
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const KEY = "gemrag.key";
  const NS = "gemrag.namespace";
  const POLL_MS = 400;
  const state = {
    ns: sessionStorage.getItem(NS) || "",
    strategies: [], // [{strategy, state, generation, describe, ...}]
    lastQuestion: "",
    lastBudget: null,
    hits: [],
    job: null, // the polled job
    queue: [], // strategies still to index after it
    ask: null, // AbortController of the streamed answer
    texts: new Map(), // "ns/doc id/version" -> document text
  };

  // -- talking to the API ---------------------------------------------------------------------------------
  class ApiError extends Error {
    constructor(status, body) {
      super((body && body.detail) || `HTTP ${status}`);
      this.status = status;
      this.body = body || {};
    }
  }

  function authHeaders(extra) {
    const headers = Object.assign({}, extra || {});
    const key = sessionStorage.getItem(KEY);
    if (key) headers.Authorization = "Bearer " + key;
    return headers;
  }

  async function failure(response) {
    let body = {};
    try {
      body = await response.json();
    } catch (_) {
      body = { detail: response.statusText };
    }
    return new ApiError(response.status, body);
  }

  async function request(path, { method = "GET", json, form, signal, accept } = {}) {
    const extra = {};
    if (json !== undefined) extra["Content-Type"] = "application/json";
    if (accept) extra.Accept = accept;
    const init = { method, headers: authHeaders(extra), signal };
    if (json !== undefined) init.body = JSON.stringify(json);
    if (form) init.body = form;
    const response = await fetch("v1" + path, init);
    if (!response.ok) throw await failure(response);
    return response;
  }

  const api = async (path, options) => (await request(path, options)).json();
  const apiText = async (path, options) => (await request(path, options)).text();
  const nsPath = (rest) => `/namespaces/${encodeURIComponent(state.ns)}${rest}`;

  function explain(error) {
    if (error instanceof ApiError) {
      const lead = {
        401: "The server needs an API key: enter one above.",
        403: `This API key may not use namespace "${state.ns}".`,
        404: "Not found.",
        409: "Not possible now.",
      }[error.status] || "The server refused the request.";
      return `${lead} (${error.status} ${error.body.error || ""}) ${error.body.detail || ""}`.trim();
    }
    if (error && error.name === "AbortError") return "Stopped.";
    return String((error && error.message) || error);
  }

  function showError(error) {
    const box = $("message");
    box.textContent = explain(error);
    box.dataset.status = error instanceof ApiError ? String(error.status) : "";
    box.hidden = false;
  }

  function clearError() {
    $("message").hidden = true;
    $("message").textContent = "";
  }

  const status = (text) => {
    $("status").textContent = text;
  };

  // -- small DOM helpers -----------------------------------------------------------------------------------
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === "text") node.textContent = value;
      else if (name === "class") node.className = value;
      else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  function stateBadge(name, value) {
    const kind = value === "built" ? "built" : value === "stale" ? "stale" : "never";
    return el("span", { class: `state state-${kind}`, "data-strategy": name, "data-state": value, text: `${name}: ${value}` });
  }

  const fmt = (x, digits = 2) => (x === null || x === undefined ? "?" : Number(x).toFixed(digits));

  // -- tabs (WAI-ARIA tabs: arrows move between them, Home/End to the ends) -------------------------------
  const tabs = Array.from(document.querySelectorAll('[role="tab"]'));

  function selectTab(tab, focus) {
    for (const other of tabs) {
      const selected = other === tab;
      other.setAttribute("aria-selected", String(selected));
      other.tabIndex = selected ? 0 : -1;
      $(other.getAttribute("aria-controls")).hidden = !selected;
    }
    if (focus) tab.focus();
  }

  tabs.forEach((tab, i) => {
    tab.addEventListener("click", () => selectTab(tab, false));
    tab.addEventListener("keydown", (event) => {
      const moves = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: tabs.length - 1 };
      if (!(event.key in moves)) return;
      event.preventDefault();
      selectTab(tabs[(moves[event.key] + tabs.length) % tabs.length], true);
    });
  });

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
    stopPolling();
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

  // -- index: plan, jobs one strategy after another, progress, cancel --------------------------------------
  const chosen = () => Array.from($("index-strategies").querySelectorAll("input:checked")).map((box) => box.value);

  $("plan-button").addEventListener("click", async () => {
    clearError();
    const names = chosen();
    if (!names.length) return showError("Choose at least one strategy.");
    $("plan").replaceChildren(el("p", { class: "hint", text: "Planning…" }));
    try {
      const plans = [];
      for (const strategy of names) plans.push(await api(nsPath("/index/plan"), { method: "POST", json: { strategy } }));
      $("plan").replaceChildren(planTable(plans));
    } catch (error) {
      $("plan").replaceChildren();
      showError(error);
    }
  });

  function planTable(plans) {
    const head = ["Strategy / pass", "Chunks or items", "LLM calls", "Prompt tokens", "Completion tokens", "Minutes"];
    const rows = [];
    for (const plan of plans) {
      for (const s of plan.strategies) {
        rows.push(
          el("tr", { class: "plan-strategy", "data-strategy": s.strategy },
            el("th", { scope: "row", text: s.strategy + (s.known ? "" : " (cost unknown)") }),
            el("td", { class: "num", text: s.chunks }),
            el("td", { class: "num", text: s.calls }),
            el("td", { class: "num", text: s.prompt_tokens }),
            el("td", { class: "num", text: s.completion_tokens }),
            el("td", { class: "num", text: s.minutes === null ? "unknown" : fmt(s.minutes, 1) }),
          ),
        );
        for (const p of s.passes) {
          rows.push(
            el("tr", {},
              el("td", { text: `  ${p.description}${p.exact ? "" : " (estimate)"}` }),
              el("td", { class: "num", text: p.items }),
              el("td", { class: "num", text: p.calls }),
              el("td", { class: "num", text: p.prompt_tokens }),
              el("td", { class: "num", text: p.completion_tokens }),
              el("td", { class: "num", text: p.minutes === null ? "unknown" : fmt(p.minutes, 1) }),
            ),
          );
        }
      }
    }
    return el(
      "table",
      { class: "grid", id: "plan-table" },
      el("caption", { text: "The cost plan, before any LLM call (minutes from this machine's measured rates)" }),
      el("thead", {}, el("tr", {}, head.map((h) => el("th", { scope: "col", text: h })))),
      el("tbody", {}, rows),
    );
  }

  let pollTimer = null;
  function stopPolling() {
    if (pollTimer) clearTimeout(pollTimer);
    pollTimer = null;
    state.job = null;
    state.queue = [];
    $("index-cancel").disabled = true;
    $("index-start").disabled = false;
  }

  $("index-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    clearError();
    const names = chosen();
    if (!names.length) return showError("Choose at least one strategy.");
    state.queue = names;
    $("index-start").disabled = true;
    $("job").replaceChildren();
    await startNext();
  });

  async function startNext() {
    const strategy = state.queue.shift();
    if (!strategy) {
      stopPolling();
      await loadDocuments();
      return;
    }
    try {
      state.job = await api(nsPath("/index"), { method: "POST", json: { strategy } });
    } catch (error) {
      showError(error);
      stopPolling();
      return;
    }
    $("index-cancel").disabled = false;
    renderJob(state.job);
    pollTimer = setTimeout(poll, POLL_MS);
  }

  async function poll() {
    const job = state.job;
    if (!job) return;
    try {
      state.job = await api(nsPath(`/jobs/${job.id}`));
    } catch (error) {
      showError(error);
      stopPolling();
      return;
    }
    renderJob(state.job);
    if (["succeeded", "failed", "cancelled"].includes(state.job.status)) {
      if (state.job.status !== "succeeded") state.queue = [];
      await loadDocuments();
      await startNext();
    } else {
      pollTimer = setTimeout(poll, POLL_MS);
    }
  }

  $("index-cancel").addEventListener("click", async () => {
    if (!state.job) return;
    state.queue = [];
    try {
      renderJob(await api(nsPath(`/jobs/${state.job.id}/cancel`), { method: "POST" }));
    } catch (error) {
      showError(error);
    }
  });

  function renderJob(job) {
    const id = `job-${job.id}`;
    const box =
      document.getElementById(id) ||
      $("job").appendChild(el("div", { id, class: "card job", "data-strategy": job.strategy || "" }));
    const stages = job.stages.map((s) =>
      el(
        "div",
        { class: "stage" },
        el("label", { text: s.description, for: `${id}-${s.description}` }),
        " ",
        el("progress", { id: `${id}-${s.description}`, max: Math.max(s.total, 1), value: s.completed }),
        ` ${s.completed} / ${s.total}` + (s.tokens ? ` · ${s.tokens} tokens` : "") + (s.note ? ` · ${s.note}` : ""),
      ),
    );
    let outcome = null;
    if (job.report) {
      const r = job.report;
      outcome = el("p", {
        text: `${r.documents} documents, ${r.chunks} chunks (${r.new_chunks} new), ${r.llm_calls} LLM calls, ` +
          `${fmt(r.seconds, 1)} s, ${r.failures} failures.`,
      });
    } else if (job.error) {
      outcome = el("p", { text: `${job.error.type}: ${job.error.message}` });
    }
    box.replaceChildren(
      el("h3", {}, `Job: ${job.strategy || "default strategy"} · `,
        el("span", { class: "job-status", "data-status": job.status, text: job.status + (job.cancel_requested && job.status === "running" ? " (cancelling)" : "") })),
      job.plan
        ? el("p", { class: "meta", text: `Plan: ${job.plan.calls} LLM calls, ${job.plan.prompt_tokens} prompt tokens, ` +
            `${job.plan.minutes === null ? "unknown" : fmt(job.plan.minutes, 1)} minutes.` })
        : null,
      stages,
      outcome,
    );
  }

  // -- ask: the streamed answer, citations, hits, the cited span -------------------------------------------
  function parseEvent(block) {
    let name = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith("event:")) name = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    }
    return { name, data: data.length ? JSON.parse(data.join("\n")) : null };
  }

  $("ask-stop").addEventListener("click", () => state.ask && state.ask.abort());

  $("ask-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    clearError();
    const question = $("question").value.trim();
    if (!question || !state.ns) return showError(state.ns ? "Write a question." : "Choose a namespace first.");
    const body = { question, stream: true };
    if ($("ask-strategy").value) body.strategy = $("ask-strategy").value;
    if ($("budget").value) body.budget = Number($("budget").value);
    if (state.ask) state.ask.abort();
    const controller = (state.ask = new AbortController());
    $("answer-text").replaceChildren();
    $("answer-meta").textContent = "";
    $("hits").replaceChildren();
    $("reader").hidden = true;
    $("answer").setAttribute("aria-busy", "true");
    $("ask-stop").disabled = false;
    state.lastQuestion = question;
    state.lastBudget = body.budget || null;
    try {
      const response = await request(nsPath("/ask"), {
        method: "POST", json: body, signal: controller.signal, accept: "text/event-stream",
      });
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          onEvent(parseEvent(buffer.slice(0, end)));
          buffer = buffer.slice(end + 2);
        }
      }
    } catch (error) {
      showError(error);
    } finally {
      if (state.ask === controller) state.ask = null;
      $("answer").setAttribute("aria-busy", "false");
      $("ask-stop").disabled = true;
    }
  });

  function onEvent({ name, data }) {
    if (name === "token") $("answer-text").append(document.createTextNode(data.text));
    else if (name === "answer") showAnswer(data);
    else if (name === "error") showError(new ApiError(data.status, data));
  }

  function showAnswer(answer) {
    state.hits = answer.hits;
    const parts = [];
    let last = 0;
    for (const match of answer.text.matchAll(/\[(\d+)\]/g)) {
      const n = Number(match[1]);
      parts.push(answer.text.slice(last, match.index));
      last = match.index + match[0].length;
      if (n >= 1 && n <= answer.hits.length) {
        parts.push(
          el("a", {
            href: `#hit-${n}`, class: "cite", "data-marker": n, text: match[0],
            "aria-label": `Citation ${n}: open the cited passage`,
            onclick: (e) => {
              e.preventDefault();
              openCitation(n);
            },
          }),
        );
      } else parts.push(match[0]);
    }
    parts.push(answer.text.slice(last));
    $("answer-text").replaceChildren(...parts);
    const u = answer.usage;
    $("answer-meta").textContent =
      `Retrieval ${fmt(answer.retrieval_seconds)} s · answer ${fmt(answer.answer_seconds)} s · ` +
      `${u.prompt_tokens} prompt + ${u.completion_tokens} completion tokens · ${u.calls} LLM call${u.calls === 1 ? "" : "s"}` +
      (u.cached ? ` (${u.cached} cached)` : "") + ` · ${u.embedding_tokens} embedding tokens` +
      (answer.dropped_citations ? ` · ${answer.dropped_citations} citation(s) to no passage removed` : "");
    const cited = new Set(answer.cited);
    $("hits").replaceChildren(...answer.hits.map((hit, i) => hitItem(hit, i + 1, cited.has(i + 1))));
  }

  function passageLabel(p) {
    const span = p.start === null ? "span unknown" : `characters ${p.start}–${p.end}`;
    return `${p.document.title} (v${p.document.version}), passage ${p.ordinal + 1}, ${span}`;
  }

  function hitItem(hit, n, cited) {
    const docs = hit.documents.map((d) => d.title).join(", ") || "no document";
    const derived = hit.kind !== "chunk";
    return el(
      "li",
      { id: `hit-${n}`, class: cited ? "cited" : null, "data-kind": hit.kind, "data-node": hit.node_id, tabindex: -1 },
      el("div", {
        class: "hit-head",
        text: `[${n}] score ${fmt(hit.score, 3)} · ${hit.strategy} · ${hit.kind} · ${docs}` +
          (derived ? ` · made from ${hit.passages.length} passage${hit.passages.length === 1 ? "" : "s"}` : ""),
      }),
      el("p", { class: "hit-text", text: hit.text }),
      el(
        "ul",
        { class: "passages", "aria-label": derived ? "Member passages" : "Passage" },
        hit.passages.map((p) =>
          el("li", {}, el("button", {
            type: "button", class: "open-passage", "data-chunk": p.chunk_id, text: passageLabel(p),
            "aria-label": `Open ${passageLabel(p)}`, onclick: () => openPassage(p),
          })),
        ),
      ),
    );
  }

  function openCitation(n) {
    const hit = state.hits[n - 1];
    const item = $(`hit-${n}`);
    if (item) item.scrollIntoView({ block: "nearest" });
    const passage = hit && (hit.passages.find((p) => p.start !== null) || hit.passages[0]);
    if (passage) openPassage(passage);
    else showError("This hit names no passage.");
  }

  async function documentText(doc) {
    const key = `${state.ns}/${doc.id}/${doc.version}`;
    if (!state.texts.has(key)) {
      state.texts.set(key, await api(nsPath(`/documents/${doc.id}/text`)));
    }
    return state.texts.get(key);
  }

  async function openPassage(passage) {
    clearError();
    let doc;
    try {
      doc = await documentText(passage.document);
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) {
        return showError(`"${passage.document.title}" is no longer in the memory.`);
      }
      return showError(error);
    }
    $("reader-title").textContent = doc.title;
    $("reader-meta").textContent = `${doc.source} · version ${doc.version}` +
      (doc.version !== passage.document.version ? ` (the hit cited version ${passage.document.version})` : "") +
      ` · ${passageLabel(passage)}`;
    // provenance spans count code points (Python str offsets); JavaScript strings count UTF-16 units
    const chars = Array.from(doc.text);
    const text = $("reader-text");
    if (passage.start === null || passage.end === null) {
      text.replaceChildren(doc.text);
    } else {
      const mark = el("mark", { id: "cited-span", "data-chunk": passage.chunk_id, text: chars.slice(passage.start, passage.end).join("") });
      text.replaceChildren(chars.slice(0, passage.start).join(""), mark, chars.slice(passage.end).join(""));
    }
    $("reader").hidden = false;
    $("reader").scrollIntoView({ block: "nearest" });
    const mark = $("cited-span");
    if (mark) text.scrollTop = Math.max(0, mark.offsetTop - text.offsetTop - text.clientHeight / 3);
    $("reader-title").focus({ preventScroll: true });
  }

  // -- graph: the memory view in a sandboxed frame ---------------------------------------------------------
  $("graph-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    clearError();
    if (!state.ns) return showError("Choose a namespace first.");
    const params = new URLSearchParams();
    if ($("graph-strategy").value) params.set("strategy", $("graph-strategy").value);
    if ($("graph-path").checked && state.lastQuestion) {
      params.set("question", state.lastQuestion);
      if (state.lastBudget) params.set("budget", String(state.lastBudget));
    }
    status("Drawing the graph…");
    try {
      $("graph-frame").srcdoc = await apiText(nsPath(`/view?${params}`), { accept: "text/html" });
      status("Graph drawn.");
    } catch (error) {
      $("graph-frame").srcdoc = "";
      showError(error);
    }
  });

  // -- start -----------------------------------------------------------------------------------------------
  showKeyState();
  switchNamespace(state.ns).finally(() => document.body.setAttribute("data-ready", "1"));
})();
