// The gemrag web page: what each strategy is for, one line each where a strategy is chosen (from the README's
// "which strategy for which task" table and the strategies page: what it builds, LLM calls to index, when to use it).
"use strict";
(() => {
  const NOTES = {
    fused: ["rank fusion of dense and BM25", "no LLM call to index",
      "multi-hop questions without an LLM at query time, long conversations, a few papers: the best measured overall"],
    dense: ["embedding top-k over the chunks", "no LLM call to index", "one long story, a character chat"],
    bm25: ["a lexical (word) index", "no LLM call to index", "exact names and rare words; a part of fused"],
    full: ["the whole document as context", "no LLM call to index", "a short text that fits the model's context"],
    iterative: ["retrieval in steps over another strategy (fused by default)", "its base's calls to index",
      "multi-hop questions with a local model at query time (1–3 LLM calls a question)"],
    gem: ["utility questions, eigentheme summaries, a chunk graph", "one LLM call per chunk plus two per summary",
      "an explorable memory of one body of text (summaries and graph to inspect)"],
    raptor: ["a tree of cluster summaries", "one LLM call per cluster", "questions about a whole text's themes"],
    remem: ["a fact graph (triples) read by Personalized PageRank", "two LLM calls per chunk",
      "fact lookups across many passages (1 LLM call a question)"],
    remem_gist: ["gists of a conversation's sessions, read by an agent", "one LLM call per session window",
      "long conversations (an agent: 1–5 LLM calls a question)"],
    remem_temporal: ["time-stamped facts of a conversation", "one LLM call per session window",
      "questions about when things happened in a conversation"],
    unweaver: ["entity classes that elect a committee of chunks", "one LLM call per chunk",
      "questions about named people, places and things"],
    hlgraph: ["who did what to whom, why and when (an event graph)", "one LLM call per chunk",
      "stories and events (1 LLM call a question)"],
  };

  // "what it builds · LLM calls to index · use it for ..." (empty for a strategy the page does not know)
  function strategyNote(name) {
    const note = NOTES[name];
    return note ? `${note[0]} · ${note[1]} · use it for ${note[2]}` : "";
  }

  Object.assign(window.gemrag, { strategyNote });
})();
