// The gemrag web page, part 4 of 5: asking (the streamed answer, [n] citations as links, unsupported and uncited
// sentences marked, citations added after the answer shown as such; the notes under the answer are notes.js's;
// retrieve-only; the hits with their passages, the cited span marked in its document: the reader follows the current
// answer).
"use strict";
(() => {
  const { $, state, ApiError, request, api, nsPath, showError, clearError, status, el, fmt, plural, thousands } =
    window.gemrag;
  const { LETTERS, answerState, evidenceOf, isWeak, isFlagged, isCitedAfter, isRecited, isUncited } =
    window.gemrag.notes;
  const MAX_QUESTION = 10000; // characters (the API's limit)
  const MAX_CHOICES = 10; // options of a multiple-choice question (the API's limit)

  // -- what was shown for the last question goes as a new one starts (the reader with it) ------------------
  function hideReader() {
    $("reader").hidden = true;
    $("reader-title").textContent = "";
    $("reader-meta").textContent = "";
    $("reader-text").replaceChildren();
  }

  function forgetAnswer() {
    state.hits = [];
    state.evidence = new Map();
    $("answer-text").replaceChildren();
    $("answer-meta").textContent = "";
    $("answer-state").replaceChildren();
    $("answer-state").hidden = true;
    $("hits").replaceChildren();
    $("hits-order").textContent = "";
    hideReader();
  }

  const count = () => {
    const n = Array.from($("question").value).length;
    $("question-count").textContent = `${thousands(n)} / ${thousands(MAX_QUESTION)} characters`;
    $("question-count").classList.toggle("over", n > MAX_QUESTION);
  };
  $("question").addEventListener("input", count);

  // the question, or null (the error said why: nothing is cut silently)
  function question() {
    const text = $("question").value.trim();
    if (!state.ns) return showError("Choose a namespace first."), null;
    if (!text) return showError("Write a question."), null;
    const n = Array.from(text).length;
    if (n > MAX_QUESTION) {
      showError(`The question is ${thousands(n)} characters long; the limit is ${thousands(MAX_QUESTION)}. ` +
        "Shorten it: nothing was cut.");
      return null;
    }
    return text;
  }

  // the options of a multiple-choice question (one per non-empty line), [] for a free-form one, or null (the error
  // said why)
  function choices() {
    const lines = $("choices").value.split("\n").map((line) => line.trim()).filter(Boolean);
    if (lines.length === 1 || lines.length > MAX_CHOICES) {
      showError(`Give between 2 and ${MAX_CHOICES} options, one per line (${plural(lines.length, "option")} now), or ` +
        "none for a free-form answer.");
      return null;
    }
    return lines;
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

  $("ask-stop").addEventListener("click", () => {
    if (!state.ask) return;
    state.ask.abort();
    hideReader(); // a stopped answer has no citation to read
  });

  function settings(text) {
    const body = { question: text };
    if ($("ask-strategy").value) body.strategy = $("ask-strategy").value;
    if ($("budget").value) body.budget = Number($("budget").value);
    return body;
  }

  // retrieve-only: the hits a question finds, no LLM call
  $("retrieve-button").addEventListener("click", async () => {
    clearError();
    const text = question();
    if (!text) return;
    if (state.ask) state.ask.abort();
    forgetAnswer();
    const body = settings(text);
    state.lastQuestion = text;
    state.lastBudget = body.budget || null;
    status("Retrieving…");
    try {
      const found = await api(nsPath("/retrieve"), { method: "POST", json: body });
      state.hits = found.hits;
      showHits(found.hits, new Set());
      $("answer-meta").textContent = `Retrieve only: no answer written, no LLM call · retrieval ${fmt(found.seconds)} s · ` +
        plural(found.hits.length, "hit");
      status(`Retrieved ${plural(found.hits.length, "hit")}.`);
    } catch (error) {
      showError(error);
    }
  });

  $("ask-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    clearError();
    const text = question();
    if (!text) return;
    const options = choices();
    if (!options) return;
    const body = Object.assign(settings(text), { stream: true }, options.length ? { choices: options } : {});
    state.lastChoices = options;
    if (state.ask) state.ask.abort();
    const controller = (state.ask = new AbortController());
    forgetAnswer();
    status("Retrieving, then the model writes…");
    $("answer").setAttribute("aria-busy", "true");
    $("ask-stop").disabled = false;
    state.lastQuestion = text;
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
      if (state.ask === controller && $("message").hidden) status("Answered.");
    } catch (error) {
      if (error && error.name === "AbortError") {
        if (state.ask === controller) status("Stopped: the answer was not finished.");
      } else showError(error);
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

  // `added`: a citation added after the answer (the model wrote the sentence without a marker; this passage was found
  // to support it); `recitedFrom`: the markers it replaced (they named passages that do not support the sentence)
  function citeLink(n, added = false, recitedFrom = null) {
    const markers = (recitedFrom || []).map((m) => `[${m}]`).join("");
    return el("a", {
      href: `#hit-${n}`, class: added ? "cite added" : "cite", "data-marker": n, text: `[${n}]`,
      title: added && markers ? `Re-cited: the sentence named ${markers}, which does not support it, and this ` +
        "passage was found to support it"
        : added ? "Cited after the answer: the sentence had no marker, and this passage was found to support it"
          : null,
      "aria-label": added ? `Citation ${n}, added after the answer: open the passage found to support the sentence`
        : `Citation ${n}: open the cited passage`,
      onclick: (e) => {
        e.preventDefault();
        openCitation(n);
      },
    });
  }

  // a piece of the answer's text with its [n] markers as links (`linked` collects the numbers linked; `added`: the
  // number of a citation added after the answer, in a sentence that had no marker of its own or whose markers,
  // `recitedFrom`, it replaced)
  function linkify(text, hits, linked, added = null, recitedFrom = null) {
    const parts = [];
    let last = 0;
    for (const match of text.matchAll(/\[(\d+)\]/g)) {
      const n = Number(match[1]);
      parts.push(text.slice(last, match.index));
      last = match.index + match[0].length;
      if (n >= 1 && n <= hits.length) {
        parts.push(citeLink(n, n === added, n === added ? recitedFrom : null));
        linked.add(n);
      } else parts.push(match[0]);
    }
    parts.push(text.slice(last));
    return parts;
  }

  // the answer's sentences, those its verification found unsupported by their citations marked, uncited ones marked
  // apart, and the citations added after the answer shown as such (when it has a verification)
  function answerParts(answer, linked) {
    const checks = (answer.verification || []).filter((v) => isFlagged(v) || isCitedAfter(v));
    if (!checks.length) return linkify(answer.text, answer.hits, linked);
    const chars = Array.from(answer.text); // Python offsets count code points
    const spans = [];
    for (const v of checks) {
      let start = v.start;
      let end = v.end;
      if (!(Number.isInteger(start) && Number.isInteger(end) && start >= 0 && end <= chars.length && start < end)) {
        const at = v.sentence ? answer.text.indexOf(v.sentence) : -1;
        if (at < 0) continue;
        start = Array.from(answer.text.slice(0, at)).length;
        end = start + Array.from(v.sentence).length;
      }
      if (!spans.length || start >= spans[spans.length - 1][1]) spans.push([start, end, v]);
    }
    const parts = [];
    let last = 0;
    for (const [start, end, v] of spans.sort((a, b) => a[0] - b[0])) {
      parts.push(...linkify(chars.slice(last, start).join(""), answer.hits, linked));
      const sentence = chars.slice(start, end).join("");
      if (isCitedAfter(v)) {
        parts.push(el("span", { class: "cited-after" },
          ...linkify(sentence, answer.hits, linked, v.added_citation, isRecited(v) ? v.recited_from : null)));
      } else if (isUncited(v)) {
        parts.push(el("span", { class: "unsupported uncited",
          title: "Uncited: this sentence names no passage, and no passage of the context was found to support it" },
        ...linkify(sentence, answer.hits, linked), el("span", { class: "flag", text: " uncited" })));
      } else {
        const againstContext = Array.isArray(v.cited) && v.cited.length === 0;
        const title = v.method === "quote"
          ? `It quotes text that ${againstContext ? "the context does" : "its citations do"} not hold`
          : againstContext ? "The context does not support this sentence (the answer cites no passage)"
            : "Its citations do not support this sentence";
        parts.push(el("span", { class: "unsupported", title },
          ...linkify(sentence, answer.hits, linked), el("span", { class: "flag", text: " unsupported" })));
      }
      last = end;
    }
    parts.push(...linkify(chars.slice(last).join(""), answer.hits, linked));
    return parts;
  }

  function showAnswer(answer) {
    state.hits = answer.hits;
    state.evidence = new Map((answer.citations || []).filter((c) => typeof c.evidence === "number")
      .map((c) => [c.marker, c.evidence]));
    state.weakBelow = typeof answer.weak_below === "number" ? answer.weak_below : state.weakBelow;
    $("weak-below").textContent = state.weakBelow.toFixed(2);
    const linked = new Set();
    const parts = answerParts(answer, linked);
    if (Number.isInteger(answer.choice)) parts.unshift(`(${LETTERS[answer.choice]}) `);
    // passages the answer cites without a marker in its text (a model that wrote only "[1]" is asked again uncited)
    const unmarked = answer.cited.filter((n) => !linked.has(n) && n >= 1 && n <= answer.hits.length);
    if (unmarked.length) parts.push(" ", el("span", { class: "meta", text: "Cites " }), ...unmarked.map(citeLink));
    $("answer-text").replaceChildren(...parts);
    answerState(answer);
    const u = answer.usage;
    $("answer-meta").textContent =
      `Retrieval ${fmt(answer.retrieval_seconds)} s · answer ${fmt(answer.answer_seconds)} s · ` +
      `${u.prompt_tokens} prompt + ${u.completion_tokens} completion tokens · ${u.calls} LLM call${u.calls === 1 ? "" : "s"}` +
      (u.cached ? ` (${u.cached} cached)` : "") + ` · ${u.embedding_tokens} embedding tokens` +
      (answer.dropped_citations ? ` · ${answer.dropped_citations} citation(s) to no passage removed` : "");
    showHits(answer.hits, new Set(answer.cited));
  }

  // the hits in the order the model read them ([n] is the n-th); said when that is not the order of their scores
  function showHits(hits, cited) {
    $("hits").replaceChildren(...hits.map((hit, i) => hitItem(hit, i + 1, cited.has(i + 1))));
    const sorted = hits.every((h, i) => i === 0 || h.score <= hits[i - 1].score);
    $("hits-order").textContent = !hits.length ? "No hits." : sorted ? "Sorted by score, best first."
      : "In the strategy's own order (its walk through the graph), not sorted by score; [n] is the n-th passage the model read.";
    $("hits-order").dataset.order = sorted ? "score" : "walk";
  }

  function passageLabel(p) {
    const span = p.start === null ? "span unknown" : `characters ${p.start}–${p.end}`;
    return `${p.document.title} (v${p.document.version}), passage ${p.ordinal + 1}, ${span}`;
  }

  function hitItem(hit, n, cited) {
    const docs = hit.documents.map((d) => d.title).join(", ") || "no document";
    const derived = hit.kind !== "chunk";
    const weak = cited && isWeak(n);
    const evidence = cited ? evidenceOf(n) : null;
    return el(
      "li",
      { id: `hit-${n}`, class: [cited ? "cited" : "", weak ? "weak" : ""].join(" ").trim() || null, "data-kind": hit.kind,
        "data-node": hit.node_id, tabindex: -1 },
      el("div", {
        class: "hit-head",
        text: `[${n}] score ${fmt(hit.score, 3)}` +
          (evidence === null ? "" : ` · evidence ${fmt(evidence, 2)}` +
            (weak ? ` (weak: below ${state.weakBelow.toFixed(2)})` : "")) + ` · ${hit.strategy} · ` +
          `${hit.kind} · ${docs}` +
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
    const hits = state.hits;
    let doc;
    try {
      doc = await documentText(passage.document);
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) {
        return showError(`"${passage.document.title}" is no longer in the memory.`);
      }
      return showError(error);
    }
    if (state.hits !== hits) return; // another question started meanwhile: its answer owns the reader
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

  count();
  Object.assign(window.gemrag, { forgetAnswer, hideReader, linkify });
})();
