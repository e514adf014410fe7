// The gemrag web page, part 1 of 5: the state, the API client (the JSON API under /v1 of the same server, the key
// from sessionStorage sent as "Authorization: Bearer KEY"), messages and DOM helpers, shared as window.gemrag.
"use strict";
window.gemrag = {};
(() => {
  const $ = (id) => document.getElementById(id);
  const KEY = "gemrag.key";
  const NS = "gemrag.namespace";
  const POLL_MS = 400;
  const state = {
    ns: sessionStorage.getItem(NS) || "",
    strategies: [], // [{strategy, state, generation, describe, ...}]
    lastQuestion: "",
    lastChoices: [], // the options of the last question asked ([] for a free-form one)
    lastBudget: null,
    hits: [],
    evidence: new Map(), // citation marker n -> its passage's evidence score (the current answer's)
    weakBelow: 0.3, // a citation whose evidence score is below this is weak (the answer's weak_below)
    job: null, // the polled job
    queue: [], // strategies still to index after it
    ask: null, // AbortController of the streamed answer
    texts: new Map(), // "ns/doc id/version" -> document text
  };

  // -- talking to the API ---------------------------------------------------------------------------------
  // FastAPI's 422 gives `detail` as a list of {loc, msg}; gemrag's own errors give a string
  function detailText(detail) {
    if (Array.isArray(detail)) {
      return detail
        .map((d) => {
          const where = (d.loc || []).filter((part) => part !== "body").map((part) =>
            typeof part === "number" ? `#${part + 1}` : String(part).replace(/_/g, " "));
          const value = typeof d.input === "string" && d.input.length > 60 ? ` (${d.input.length} characters given)` : "";
          return (where.length ? `${where.join(" › ")}: ` : "") + (d.msg || "invalid") + value;
        })
        .join("; ");
    }
    if (detail && typeof detail === "object") return JSON.stringify(detail);
    return detail ? String(detail) : "";
  }

  class ApiError extends Error {
    constructor(status, body) {
      super(detailText(body && body.detail) || `HTTP ${status}`);
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
        422: "The server could not accept this input.",
        503: "The server's model is not available.",
      }[error.status] || (error.status >= 500 ? "The server failed." : "The server refused the request.");
      const name = error.status === 422 ? "invalid input" : error.body.error || "";
      return `${lead} (${error.status} ${name}) ${detailText(error.body.detail)}`.trim();
    }
    if (error && error.name === "AbortError") return "Stopped.";
    return String((error && error.message) || error);
  }

  // an error replaces the status line: nothing stale stays beside it
  function showError(error) {
    const box = $("message");
    box.textContent = explain(error);
    box.dataset.status = error instanceof ApiError ? String(error.status) : "";
    box.hidden = false;
    $("status").textContent = "";
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
  const plural = (n, word, many) => `${n} ${n === 1 ? word : many || word + "s"}`;
  const thousands = (n) => Number(n).toLocaleString("en");

  Object.assign(window.gemrag, { $, KEY, NS, POLL_MS, state, ApiError, request, api, apiText, nsPath, explain,
    detailText, showError, clearError, status, el, stateBadge, fmt, plural, thousands });
})();
