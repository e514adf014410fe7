// gemrag memory view: draws the data embedded in #gemrag-data with vis-network (inlined above this script).
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("gemrag-data").textContent);
  const palette = data.palette;
  const GREY = "#b0bec5";
  const PATH = "#c62828";
  const SHAPES = { chunk: "dot", summary: "diamond", entity: "square", fact: "triangle" };
  const OTHER_SHAPES = ["star", "hexagon", "triangleDown", "box"];
  const byId = new Map(data.nodes.map((n) => [n.id, n]));
  const kinds = [...new Set(data.nodes.map((n) => n.kind))];

  function shapeOf(kind) {
    if (SHAPES[kind]) return SHAPES[kind];
    const others = kinds.filter((k) => !SHAPES[k]);
    return OTHER_SHAPES[others.indexOf(kind) % OTHER_SHAPES.length];
  }
  function colourOf(node) {
    if (node.theme !== null && node.theme !== undefined) return palette[node.theme % palette.length];
    if (node.kind === "chunk") return GREY;
    return palette[(kinds.indexOf(node.kind) + 3) % palette.length];
  }
  function faded(hex) {
    const v = parseInt(hex.slice(1), 16);
    return `rgba(${(v >> 16) & 255},${(v >> 8) & 255},${v & 255},0.45)`;
  }
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v);
    }
    for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return e;
  }

  // -- the retrieval path ----------------------------------------------------------------------------------------
  const path = data.path;
  const stepOf = new Map();
  if (path) path.steps.forEach((s, i) => stepOf.set(s.node, i));
  const known = (v) => v !== null && v !== undefined;
  const walked = Boolean(path && (path.q_star || path.steps.some((s) => known(s.via)))); // a graph walk's path

  // -- nodes and edges -------------------------------------------------------------------------------------------
  const visNodes = data.nodes.map((n) => {
    const base = colourOf(n);
    const onPath = stepOf.has(n.id);
    const dim = path && !onPath && n.kind !== "summary"; // summary nodes stay legible as landmarks
    const colour = dim ? faded(base) : base;
    const size = n.kind === "summary" ? 26 : n.kind === "chunk" ? 12 : 9;
    const node = {
      id: n.id,
      shape: shapeOf(n.kind),
      size: onPath ? size + 8 : size,
      color: { background: colour, border: dim ? faded("#455a64") : "#37474f",
               highlight: { background: base, border: "#000" } },
      borderWidth: n.kind === "summary" ? 2 : 1,
      label: n.kind === "chunk" ? undefined : n.label,
      title: `${n.kind} ${n.label}\n${n.text.length > 160 ? n.text.slice(0, 160) + "…" : n.text}`, // hover text
      font: { size: n.kind === "summary" ? 15 : 12, color: dim ? "#9e9e9e" : "#263238" },
    };
    if (onPath) {
      const i = stepOf.get(n.id);
      node.label = (i === 0 && path.q_star ? "q* → " : "") + String(i + 1);
      node.borderWidth = 4;
      node.color.border = PATH;
      node.font = { size: 18, color: PATH, strokeWidth: 3, strokeColor: "#fff", bold: true };
    }
    return node;
  });
  const wmax = Math.max(1e-9, ...data.edges.map((e) => e.weight));
  const visEdges = data.edges.map((e, i) => ({
    id: "e" + i, from: e.from, to: e.to, value: e.weight / wmax,
    color: { color: e.kind === "source" ? "#cfd8dc" : "#b0bec5", opacity: path ? 0.35 : 0.7 },
    dashes: e.kind === "source",
  }));
  if (path) {
    path.steps.forEach((s, i) => {
      if (known(s.via) && byId.has(s.via) && byId.has(s.node)) {
        visEdges.push({ id: "p" + i, from: s.via, to: s.node, arrows: "to", width: 4, value: 1,
                        color: { color: PATH, opacity: 1 } });
      }
    });
  }
  const nodes = new vis.DataSet(visNodes);
  const edges = new vis.DataSet(visEdges);
  const container = document.getElementById("graph");
  const network = new vis.Network(container, { nodes, edges }, {
    layout: { randomSeed: 7 }, // the same page draws the same picture
    interaction: { hover: true, tooltipDelay: 150 },
    edges: { smooth: false, scaling: { min: 0.5, max: 4 }, selectionWidth: 2 },
    physics: {
      solver: "forceAtlas2Based",
      forceAtlas2Based: { gravitationalConstant: -60, springLength: 90, avoidOverlap: 0.4 },
      stabilization: { iterations: 600, updateInterval: 50 },
    },
  });
  function ready() {
    network.setOptions({ physics: false });
    network.fit();
    document.body.dataset.ready = "1";
  }
  if (data.nodes.length) network.once("stabilizationIterationsDone", ready);
  else ready();

  // -- header and message ----------------------------------------------------------------------------------------
  const counts = document.getElementById("counts");
  counts.dataset.nodes = String(data.nodes.length);
  counts.dataset.edges = String(data.edges.length);
  counts.textContent = `${data.strategy} · ${data.nodes.length} nodes · ${data.edges.length} of ${data.edges_total}` +
    ` edges (weight ≥ ${data.threshold.toFixed(3)})`;
  if (data.message) {
    const m = document.getElementById("message");
    m.textContent = data.message;
    m.hidden = false;
  }

  // -- the details of one node -----------------------------------------------------------------------------------
  const details = document.getElementById("details");
  function nodeLink(id) {
    const n = byId.get(id);
    return el("span", { class: "link", onclick: () => focusNode(id) }, n ? `${n.kind} ${n.label}` : `node ${id}`);
  }
  function show(id) {
    const n = byId.get(id);
    if (!n) return;
    details.replaceChildren();
    const head = el("p", {}, el("span", { class: "swatch", style: `background:${colourOf(n)}` }),
      el("span", { class: "kind" }, n.kind), ` #${n.id} `, n.kind === "chunk" ? `(document ${n.doc}) ` : "");
    if (known(n.theme)) head.append(`· eigentheme ${n.theme + 1}`);
    details.append(head);
    if (stepOf.has(id)) {
      const s = path.steps[stepOf.get(id)];
      const p = el("p", {}, `Retrieval step ${stepOf.get(id) + 1}, score ${s.score.toFixed(4)}`);
      if (known(s.via)) p.append(", reached from ", nodeLink(s.via));
      else if (walked && stepOf.get(id) === 0) p.append(" (start node: owner of q*)");
      else if (walked) p.append(" (restart)");
      details.append(p);
    }
    details.append(el("div", { class: "node-text", id: "node-text" }, n.text));
    if (n.questions.length) {
      details.append(el("h3", {}, "Utility questions"));
      details.append(el("ul", { class: "questions" }, ...n.questions.map((q) => el("li", {}, q))));
    }
    if (n.members && n.members.length) {
      const p = el("p", {}, "Members: ");
      n.members.forEach((m, i) => { if (i) p.append(", "); p.append(nodeLink(m)); });
      details.append(p);
    }
  }
  function focusNode(id) {
    network.selectNodes([id]);
    network.focus(id, { scale: 1.2, animation: { duration: 300 } });
    show(id);
  }
  network.on("click", (params) => { if (params.nodes.length) show(params.nodes[0]); });

  // -- search ----------------------------------------------------------------------------------------------------
  const search = document.getElementById("search");
  const searchCount = document.getElementById("search-count");
  let matches = [];
  search.addEventListener("input", () => {
    const q = search.value.trim().toLowerCase();
    matches = q ? data.nodes.filter((n) => n.text.toLowerCase().includes(q) ||
      n.questions.some((x) => x.toLowerCase().includes(q))).map((n) => n.id) : [];
    network.selectNodes(matches);
    searchCount.textContent = q ? `${matches.length} match${matches.length === 1 ? "" : "es"}` : "";
  });
  search.addEventListener("keydown", (ev) => { if (ev.key === "Enter" && matches.length) focusNode(matches[0]); });

  // -- path panel ------------------------------------------------------------------------------------------------
  if (path) {
    document.getElementById("path-panel").hidden = false;
    const box = document.getElementById("path");
    box.append(el("p", {}, el("b", {}, "Question: "), path.question));
    if (path.q_star) box.append(el("div", { class: "qstar" }, el("b", {}, "q*: "), path.q_star));
    box.append(el("ol", { class: "steps" }, ...path.steps.map((s) => {
      const n = byId.get(s.node);
      const li = el("li", { onclick: () => focusNode(s.node) },
        n ? `${n.kind} ${n.label}` : `node ${s.node}`, ` — ${s.score.toFixed(3)}`);
      if (known(s.via) && byId.has(s.via)) li.append(` ← ${byId.get(s.via).label}`);
      return li;
    })));
    box.append(el("p", { class: "hint" }, `${path.strategy}: the ${path.steps.length} returned nodes in retrieval` +
      (walked ? " order; red arrows are the edges the walk took." : " order.")));
  }

  // -- legend ----------------------------------------------------------------------------------------------------
  const legend = document.getElementById("legend");
  data.themes.forEach((t) => {
    const row = el("div", { class: "legend-row" }, el("span", { class: "swatch", style:
      `background:${palette[t.index % palette.length]}` }), `eigentheme ${t.index + 1}: λ${t.eigen_index + 1} = ` +
      `${t.eigenvalue.toFixed(4)} `);
    if (t.summary !== null && t.summary !== undefined) row.append("(", nodeLink(t.summary), ")");
    legend.append(row);
  });
  kinds.forEach((k) => {
    const count = data.nodes.filter((n) => n.kind === k).length;
    legend.append(el("div", { class: "legend-row" }, `${shapeOf(k)}: ${k} (${count})`));
  });
  if (data.themes.length) legend.append(el("p", { class: "hint" }, "Chunks are coloured by their dominant " +
    "eigentheme (the summarized eigenvector with the largest component on the chunk)."));

  // -- spectrum --------------------------------------------------------------------------------------------------
  if (data.spectrum) {
    document.getElementById("spectrum-panel").hidden = false;
    const s = data.spectrum;
    const dl = el("dl", { class: "figures" });
    const add = (k, v) => dl.append(el("dt", {}, k), el("dd", {}, v));
    add("nodes n", s.n);
    add("Remark 2 estimate", `${s.estimated_themes} themes`);
    add("Λ = ‖L‖²_F (Remark 3)", Number(s.spectral_energy).toFixed(4));
    add("trace L", Number(s.trace).toFixed(4));
    document.getElementById("spectrum").append(dl,
      el("p", { class: "hint" }, "Top eigenvalues by |λ|; coloured ones became summary nodes."));
  }

  window.gemragView = { network, nodes, edges, data, show, focusNode };
})();
