// The gemrag web page, part 4 of 5: asking (the streamed answer, [n] citations as links, the hits with their
// passages, the cited span marked in its document).
"use strict";
(() => {
  const { $, state, ApiError, request, api, nsPath, showError, clearError, el, fmt } = window.gemrag;

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

  function citeLink(n) {
    return el("a", {
      href: `#hit-${n}`, class: "cite", "data-marker": n, text: `[${n}]`,
      "aria-label": `Citation ${n}: open the cited passage`,
      onclick: (e) => {
        e.preventDefault();
        openCitation(n);
      },
    });
  }

  function showAnswer(answer) {
    state.hits = answer.hits;
    const parts = [];
    const linked = new Set();
    let last = 0;
    for (const match of answer.text.matchAll(/\[(\d+)\]/g)) {
      const n = Number(match[1]);
      parts.push(answer.text.slice(last, match.index));
      last = match.index + match[0].length;
      if (n >= 1 && n <= answer.hits.length) {
        parts.push(citeLink(n));
        linked.add(n);
      } else parts.push(match[0]);
    }
    parts.push(answer.text.slice(last));
    // passages the answer cites without a marker in its text (a model that wrote only "[1]" is asked again uncited)
    const unmarked = answer.cited.filter((n) => !linked.has(n) && n >= 1 && n <= answer.hits.length);
    if (unmarked.length) parts.push(" ", el("span", { class: "meta", text: "Cites " }), ...unmarked.map(citeLink));
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
})();
