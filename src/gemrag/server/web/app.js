// The gemrag web page, part 5 of 5: the section tabs, the graph (the memory view in a sandboxed frame), start.
"use strict";
(() => {
  const { $, state, apiText, nsPath, showError, clearError, status } = window.gemrag;

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
  window.gemrag.showKeyState();
  window.gemrag.switchNamespace(state.ns).finally(() => document.body.setAttribute("data-ready", "1"));
})();
