// The gemrag web page: the chat (a character whose memory is the namespace, as `gemrag chat`): its stored history,
// each turn's reply with the memories it was given (their documents and passages, as the Ask tab's hits).
"use strict";
(() => {
  const { $, state, api, nsPath, showError, clearError, status, el, fmt, plural } = window.gemrag;

  const persona = () => $("persona").value.trim() || "Assistant";

  function memories(hits) {
    if (!hits || !hits.length) return el("p", { class: "hint", text: "No memory recalled for this turn." });
    return el("details", { class: "recalled" },
      el("summary", { text: `Recalled ${plural(hits.length, "memory", "memories")}` }),
      el("ol", {}, hits.map((hit, i) => el("li", { "data-node": hit.node_id },
        el("div", { class: "hit-head", text: `[${i + 1}] score ${fmt(hit.score, 3)} · ${hit.strategy} · ${hit.kind} · ` +
          (hit.documents.map((d) => d.title).join(", ") || "no document") +
          (hit.passages.length ? ` · ${hit.passages.map((p) => p.start === null ? `passage ${p.ordinal + 1}`
            : `passage ${p.ordinal + 1}, characters ${p.start}–${p.end}`).join("; ")}` : "") }),
        el("p", { class: "hit-text", text: hit.text })))));
  }

  function exchange(turn, user, reply, hits) {
    return el("li", { class: "exchange", "data-turn": turn },
      el("p", { class: "said user" }, el("strong", { text: "You: " }), user),
      reply === null ? el("p", { class: "hint", text: "(no reply: the turn was interrupted)" })
        : el("p", { class: "said reply" }, el("strong", { text: `${persona()}: ` }), reply),
      hits === undefined ? null : memories(hits));
  }

  let asked = 0; // the latest history request: an older answer (another character's) is dropped

  async function loadHistory() {
    clearError();
    $("chat-log").replaceChildren();
    if (!state.ns || !state.nsReady) return;
    const mine = ++asked;
    try {
      const history = await api(nsPath(`/chat/${encodeURIComponent(persona())}`));
      if (mine !== asked) return;
      $("chat-log").replaceChildren(...history.exchanges.map((e) => exchange(e.turn, e.user, e.reply)));
      $("chat-empty").hidden = history.exchanges.length > 0;
    } catch (error) {
      showError(error);
    }
  }

  $("chat-load").addEventListener("click", loadHistory);
  $("tab-chat").addEventListener("click", loadHistory);

  $("chat-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    clearError();
    if (!state.ns) return showError("Choose a namespace first.");
    const message = $("chat-message").value.trim();
    if (!message) return showError("Write a message.");
    if (Array.from(message).length > 10000) return showError("The message is longer than 10,000 characters; shorten it.");
    const body = { message, persona: persona() };
    if ($("chat-strategy").value) body.strategy = $("chat-strategy").value;
    $("chat-send").disabled = true;
    status(`${persona()} is recalling and replying…`);
    try {
      const turn = await api(nsPath("/chat"), { method: "POST", json: body });
      $("chat-log").append(exchange(turn.turn, message, turn.reply, turn.hits));
      $("chat-empty").hidden = true;
      $("chat-message").value = "";
      status(`Turn ${turn.turn}: ${fmt(turn.seconds, 1)} s, the exchange stored and indexed (${turn.strategy}).`);
      state.nsReady = true;
    } catch (error) {
      showError(error);
    } finally {
      $("chat-send").disabled = false;
    }
  });

  const forgetChat = () => {
    $("chat-log").replaceChildren();
    $("chat-empty").hidden = false;
  };
  Object.assign(window.gemrag, { forgetChat });
})();
