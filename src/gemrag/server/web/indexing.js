// The gemrag web page, part 3 of 5: indexing (the cost plan, jobs one strategy after another, live progress bars,
// cancel, the namespace's jobs list: a job started in another tab, or before a reload, is found and followed).
"use strict";
(() => {
  const { $, POLL_MS, state, api, nsPath, showError, clearError, status, el, fmt, plural, thousands } = window.gemrag;
  const JOBS_MS = 2000; // how often the jobs list is asked for while no job is followed
  const ACTIVE = ["queued", "running"];

  // -- the cost plan -------------------------------------------------------------------------------------
  const chosen = () => Array.from($("index-strategies").querySelectorAll("input:checked")).map((box) => box.value);
  const clearPlan = () => $("plan").replaceChildren();
  $("index-strategies").addEventListener("change", clearPlan); // a plan for other strategies is stale

  // calibrate: time the model on this machine first (a few seconds; only a model run in the server's process)
  async function showPlan(calibrate) {
    clearError();
    const names = chosen();
    if (!names.length) return showError("Choose at least one strategy.");
    $("plan").replaceChildren(el("p", { class: "hint", text: calibrate ? "Measuring the model's speed, then planning…" : "Planning…" }));
    try {
      const plans = [];
      for (const strategy of names) {
        plans.push(await api(nsPath("/index/plan"), { method: "POST", json: calibrate ? { strategy, calibrate } : { strategy } }));
      }
      $("plan").replaceChildren(planTable(plans));
    } catch (error) {
      clearPlan();
      showError(error);
    }
  }
  $("plan-button").addEventListener("click", () => showPlan(false));

  const minutesText = (m) => (m === null || m === undefined ? "not measured" : fmt(m, 1));

  function planTable(plans) {
    const head = ["Strategy / pass", "Chunks or items", "LLM calls", "Prompt tokens", "Completion tokens", "Minutes"];
    // each value names its column (data-label): a narrow screen shows the rows as cards
    const cell = (i, text) => el("td", { class: "num", "data-label": head[i], text });
    const row = (label, items, x, cls) =>
      el("tr", cls || {},
        label,
        cell(1, items),
        cell(2, thousands(x.calls)),
        cell(3, thousands(x.prompt_tokens)),
        cell(4, thousands(x.completion_tokens)),
        cell(5, x.calls ? minutesText(x.minutes) : "0"));
    const rows = [];
    for (const plan of plans) {
      for (const s of plan.strategies) {
        rows.push(row(el("th", { scope: "row", text: s.strategy + (s.known ? "" : " (cost unknown)") }), s.chunks, s,
          { class: "plan-strategy", "data-strategy": s.strategy }));
        for (const p of s.passes) {
          rows.push(row(el("td", { class: "pass", text: `${p.description}${p.exact ? "" : " (estimate)"}` }), p.items, p,
            { class: "plan-pass" }));
        }
      }
    }
    const calls = plans.some((p) => p.calls > 0);
    const unmeasured = plans.filter((p) => p.calls > 0 && p.minutes === null);
    const rates = plans.map((p) => p.rates).find((r) => r && r.source !== "unknown");
    let caption = "The cost plan, before any LLM call";
    if (!calls) caption += ": no LLM call";
    else if (unmeasured.length) caption += ": minutes not measured on this machine yet (a first build records its rates)";
    else if (rates) caption += ` (minutes from this machine's ${rates.source === "recorded" ? "recorded calls" : "calibration"})`;
    const notes = plans.map((p) => p.rates && p.rates.detail).filter((d, i, all) => d && all.indexOf(d) === i);
    return el("div", { class: "table-wrap" },
      el("table", { class: "grid stack", id: "plan-table" },
        el("caption", { text: caption }),
        el("thead", {}, el("tr", {}, head.map((h) => el("th", { scope: "col", text: h })))),
        el("tbody", {}, rows)),
      calls ? notes.map((d) => el("p", { class: "hint rates-detail", text: `Rates: ${d}.` })) : [],
      unmeasured.length ? el("button", { type: "button", id: "plan-calibrate", onclick: () => showPlan(true),
        text: "Measure the model's speed here, then plan again" }) : null);
  }

  // -- jobs: start one strategy after another, follow the running one -------------------------------------
  let pollTimer = null;

  function buttons() {
    const job = state.job;
    const active = job && ACTIVE.includes(job.status);
    $("index-start").disabled = Boolean(active || state.queue.length);
    $("index-cancel").disabled = !active || job.cancel_requested;
    $("index-cancel").textContent = active && job.cancel_requested ? "Cancelling…" : "Cancel the job";
  }

  function stopPolling() {
    if (pollTimer) clearTimeout(pollTimer);
    pollTimer = null;
    state.job = null;
    state.queue = [];
    buttons();
  }

  $("index-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    clearError();
    const names = chosen();
    if (!names.length) return showError("Choose at least one strategy.");
    state.queue = names;
    $("job").replaceChildren();
    await startNext();
  });

  async function startNext() {
    const strategy = state.queue.shift();
    if (!strategy) {
      buttons();
      await window.gemrag.loadDocuments();
      return;
    }
    try {
      follow(await api(nsPath("/index"), { method: "POST", json: { strategy } }));
    } catch (error) {
      showError(error);
      state.queue = [];
      buttons();
      await refreshJobs();
    }
  }

  function follow(job) {
    if (pollTimer) clearTimeout(pollTimer);
    state.job = job;
    renderJob(job);
    buttons();
    pollTimer = setTimeout(poll, POLL_MS);
  }

  async function poll() {
    pollTimer = null;
    const job = state.job;
    if (!job) return;
    const ns = state.ns;
    let now;
    try {
      now = await api(nsPath(`/jobs/${job.id}`));
    } catch (error) {
      if (ns !== state.ns) return;
      showError(error);
      stopPolling();
      return;
    }
    if (ns !== state.ns || !state.job || state.job.id !== job.id) return;
    state.job = now;
    renderJob(now);
    buttons();
    if (ACTIVE.includes(now.status)) {
      pollTimer = setTimeout(poll, POLL_MS);
      return;
    }
    state.job = null;
    buttons();
    if (now.status !== "succeeded") state.queue = [];
    status(`Index job (${now.strategy || "default strategy"}) ${now.status}.`);
    await refreshJobs();
    await window.gemrag.loadDocuments();
    await startNext();
  }

  $("index-cancel").addEventListener("click", async () => {
    const job = state.job;
    if (!job) return;
    state.queue = [];
    $("index-cancel").disabled = true; // one click is enough: it waits for the LLM call in flight
    try {
      const now = await api(nsPath(`/jobs/${job.id}/cancel`), { method: "POST" });
      if (state.job && state.job.id === now.id) state.job = now;
      renderJob(now);
    } catch (error) {
      showError(error);
    }
    buttons();
  });

  // -- the job's card: plan, bars with n / total, outcome in words, log -------------------------------------
  function stageRow(job, s, i) {
    const id = `job-${job.id}-stage-${i}`;
    const extra = (s.tokens ? ` · ${thousands(s.tokens)} tokens written` : "") + (s.note ? ` · ${s.note}` : "");
    return el("div", { class: "stage", "data-stage": s.description, "data-completed": s.completed, "data-total": s.total },
      el("label", { for: id, text: s.description }),
      el("progress", { id, max: Math.max(s.total, 1), value: Math.min(s.completed, Math.max(s.total, 1)) }),
      el("span", { class: "count", text: `${s.completed} / ${s.total}${extra}` }));
  }

  function planLine(plan) {
    if (!plan) return null;
    const minutes = plan.calls === 0 ? "" : plan.minutes === null ? ", minutes not measured on this machine yet"
      : `, about ${fmt(plan.minutes, 1)} minutes`;
    return el("p", { class: "meta", text: `Plan: ${plural(plan.calls, "LLM call")}, ${thousands(plan.prompt_tokens)} prompt ` +
      `tokens${minutes}.` });
  }

  function kept(job) {
    const done = job.stages.map((s) => `${s.description}: ${s.completed} of ${s.total} done`);
    return done.length
      ? `Kept: ${done.join("; ")}. Their LLM answers are cached, and the next build reuses them (it repeats no ` +
        "call). Nothing of this build was published: the last build stays readable."
      : "Cancelled before its first LLM call: nothing to keep; the last build stays readable.";
  }

  function outcome(job) {
    if (job.status === "queued") return el("p", { class: "hint", text: "Waiting to start." });
    if (job.status === "running" && job.cancel_requested) {
      return el("p", { class: "notice", text: "Cancelling: the build stops as soon as the current LLM call has " +
        "ended (it never interrupts one; with a slow model that can take minutes). What is done so far is kept." });
    }
    if (job.status === "succeeded" && job.report) {
      const r = job.report;
      const plan = job.plan;
      const took = r.seconds / 60;
      const versus = plan ? ` Plan vs actual: ${plan.calls} vs ${r.llm_calls} LLM calls` +
        (plan.minutes === null || plan.calls === 0 ? "" : `, ${fmt(plan.minutes, 1)} vs ${fmt(took, 1)} minutes`) + "." : "";
      const failed = r.failures
        ? ` ${plural(r.failures, "item")} failed (the model's answer stayed invalid after retries); the next build retries them.`
        : "";
      return el("p", { class: "outcome ok", text: `Done: ${plural(r.documents, "document")}, ${plural(r.chunks, "chunk")} ` +
        `(${r.new_chunks} new), ${plural(r.llm_calls, "LLM call")}, ${fmt(r.seconds, 1)} s.${versus}${failed}` });
    }
    if (job.status === "cancelled") return el("p", { class: "outcome warn", text: kept(job) });
    if (job.status === "failed" && job.error) {
      return el("p", { class: "outcome bad", text: `Failed: ${job.error.message} (${job.error.type}).` });
    }
    return null;
  }

  function failureList(job) {
    if (!job.failures || !job.failures.length) return null;
    return el("div", { class: "failures" },
      el("p", { text: `${plural(job.failures.length, "item")} failed (the model's answer stayed invalid after its ` +
        "retries; the next build tries them again):" }),
      el("ul", {}, job.failures.map((f) => el("li", {},
        f.document ? `"${f.document}", passage ${f.passage}: ` : "a derived node: ", f.message))));
  }

  const clock = (t) => new Date(t * 1000).toLocaleTimeString("en-GB");

  function logBox(job, open) {
    if (!job.log || !job.log.length) return null;
    return el("details", { class: "log", open },
      el("summary", { text: `Log (${plural(job.log.length, "line")})` }),
      el("ol", {}, job.log.map((line) => el("li", {}, el("time", { text: clock(line.time) }), ` ${line.text}`))));
  }

  function renderJob(job) {
    const id = `job-${job.id}`;
    const box = document.getElementById(id) ||
      $("job").appendChild(el("section", { id, class: "card job", "data-strategy": job.strategy || "" }));
    const details = box.querySelector("details.log");
    const open = details ? details.open : ACTIVE.includes(job.status);
    const word = job.status + (job.cancel_requested && job.status === "running" ? " (cancelling)" : "");
    box.replaceChildren(
      ...[
        el("h3", {}, `Job: ${job.strategy || "default strategy"} · `,
          el("span", { class: "job-status", "data-status": job.status, text: word })),
        planLine(job.plan),
        ...job.stages.map((s, i) => stageRow(job, s, i)),
        outcome(job),
        failureList(job),
        logBox(job, open),
      ].filter(Boolean),
    );
  }

  // -- the namespace's jobs: running and recent, from every tab ------------------------------------------
  function jobRow(job) {
    const r = job.report;
    const plan = job.plan;
    const started = job.started || job.created;
    const minutes = r ? r.seconds / 60 : job.finished && job.started ? (job.finished - job.started) / 60 : null;
    const tokens = r ? thousands(r.usage.prompt_tokens + r.usage.completion_tokens) : "–";
    const vs = (planned, actual) => `${planned === null || planned === undefined ? "–" : planned} → ${actual}`;
    return el("tr", { "data-job": job.id, "data-status": job.status },
      el("td", { "data-label": "Started", text: clock(started) }),
      el("td", { "data-label": "Strategy", text: job.strategy || "default" }),
      el("td", { "data-label": "Outcome" }, el("span", { class: `job-word job-${job.status}`, text: job.status + (job.cancel_requested &&
        ACTIVE.includes(job.status) ? " (cancelling)" : "") })),
      el("td", { class: "num", "data-label": "LLM calls", text: vs(plan && plan.calls, r ? r.llm_calls : "–") }),
      el("td", { class: "num", "data-label": "Tokens", text: tokens }),
      el("td", { class: "num", "data-label": "Minutes", text: vs(plan && plan.minutes !== null ? fmt(plan.minutes, 1) : null,
        minutes === null ? "–" : fmt(minutes, 1)) }),
      el("td", { class: "num", "data-label": "Failures", text: r ? r.failures : job.error ? job.error.type : "–" }));
  }

  function renderJobs(jobs) {
    const recent = jobs.slice().reverse().slice(0, 10);
    $("jobs").tBodies[0].replaceChildren(...recent.map(jobRow));
    $("jobs-empty").hidden = recent.length > 0;
    $("jobs").hidden = recent.length === 0;
  }

  // the jobs list; a running job nobody here follows yet (another tab's, or ours before a reload) is followed
  async function refreshJobs({ quiet = false } = {}) {
    const ns = state.ns;
    if (!ns) return;
    let jobs;
    try {
      ({ jobs } = await api(nsPath("/jobs")));
    } catch (error) {
      if (!quiet && ns === state.ns) showError(error);
      return;
    }
    if (ns !== state.ns) return;
    renderJobs(jobs);
    const running = jobs.find((j) => ACTIVE.includes(j.status));
    if (running && (!state.job || state.job.id !== running.id)) {
      if (!document.getElementById(`job-${running.id}`)) $("job").replaceChildren();
      follow(running);
    }
  }

  function forgetJobs() {
    $("jobs").tBodies[0].replaceChildren();
    $("jobs").hidden = true;
    $("jobs-empty").hidden = false;
  }

  setInterval(() => {
    if (state.ns && state.nsReady && !state.job && document.visibilityState === "visible") refreshJobs({ quiet: true });
  }, JOBS_MS);

  Object.assign(window.gemrag, { stopPolling, refreshJobs, forgetJobs, clearPlan });
})();
