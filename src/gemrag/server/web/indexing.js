// The gemrag web page, part 3 of 5: indexing (the cost plan, jobs one strategy after another, live progress,
// cancel).
"use strict";
(() => {
  const { $, POLL_MS, state, api, nsPath, showError, clearError, el, fmt } = window.gemrag;

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
      await window.gemrag.loadDocuments();
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
      await window.gemrag.loadDocuments();
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

  Object.assign(window.gemrag, { stopPolling });
})();
