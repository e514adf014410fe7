// The gemrag web page: the notes under an answer (used by ask.js): "not found in the memory" when the model declines,
// weak citations, unsupported and uncited sentences, how the question's form was read, an answer asked again because
// its form did not fit the question, citations added after the answer or re-cited; multiple choice with the option
// chosen and, when the server scores them, every option's score.
"use strict";
(() => {
  const { $, state, el, plural } = window.gemrag;
  const LETTERS = "ABCDEFGHIJ";
  // the wording of a model that declines: read only when the answer carries no abstention flag (the server did not
  // check the evidence: [answer] abstain_below unset)
  const DECLINED = /\b(not mentioned|not (provided|stated|given|found|included|contained) in|no (information|mention)|does(n't| not) (say|mention|contain|provide|state)|cannot (be )?(answer|determine|find|tell)|can't (answer|determine|tell)|i don't know|no answer)\b/i;
  // a check that flags its sentence, a sentence cited after the answer, an uncited one
  const isFlagged = (v) => v && v.supported === false;
  const isCitedAfter = (v) => v && v.supported === true && Number.isInteger(v.added_citation);
  const isRecited = (v) => isCitedAfter(v) && Array.isArray(v.recited_from) && v.recited_from.length > 0;
  const isUncited = (v) => isFlagged(v) && v.uncited === true;

  // a cited passage is weak when its evidence score (the best cosine between the question and one of its sentences,
  // the same measure for every strategy) is below the answer's weak_below
  const evidenceOf = (n) => (state.evidence.has(n) ? state.evidence.get(n) : null);
  const isWeak = (n) => evidenceOf(n) !== null && evidenceOf(n) < state.weakBelow;

  // the model declined: the answer's structured flag (abstained on weak evidence) when it has one, else its wording
  function declined(answer) {
    if (Number.isInteger(answer.choice)) return false; // an option was chosen: its words are no refusal
    if (answer.abstained === true || answer.abstained === false) return answer.abstained;
    return !answer.text.trim() || (!answer.cited.length && DECLINED.test(answer.text));
  }

  function answerState(answer) {
    const box = $("answer-state");
    const weak = answer.cited.filter(isWeak);
    const checks = answer.verification || [];
    const flagged = checks.filter((v) => isFlagged(v) && !isUncited(v));
    const unsupported = flagged.length;
    // an answer that cites no passage was checked against the whole context
    const againstContext = flagged.every((v) => Array.isArray(v.cited) && v.cited.length === 0);
    const uncited = checks.filter(isUncited).length;
    const citedAfter = checks.filter((v) => isCitedAfter(v) && !isRecited(v)).map((v) => v.added_citation);
    const recited = checks.filter(isRecited);
    const notes = [];
    if (declined(answer)) {
      notes.push(el("p", { class: "state-box notfound", "data-state": "not-found",
        "data-from": answer.abstained === true ? "abstained" : "wording" },
        el("strong", { text: "Not found in the memory. " }),
        "The model found no answer in the retrieved passages. See what was found with Retrieve only, try another " +
        "strategy or a larger budget, or add the documents that hold the answer."));
    }
    if (weak.length) {
      notes.push(el("p", { class: "state-box weak", "data-state": "weak" },
        el("strong", { text: "Weak evidence. " }),
        `${weak.length === 1 ? "Citation" : "Citations"} ${weak.map((n) => `[${n}]`).join(", ")} ` +
        `${weak.length === 1 ? "rests on a passage" : "rest on passages"} whose evidence score (the best similarity ` +
        `between the question and one of its sentences) is below ${state.weakBelow.toFixed(2)}: check ` +
        `${weak.length === 1 ? "it" : "them"} before trusting the answer.`));
    }
    if (unsupported) {
      // a quotation its passages do not hold (the check's "quote" method) is said as such, as gemrag ask says it
      const quoting = flagged.filter((v) => v.method === "quote").length;
      const held = againstContext ? "the context does" : "the passages cited do";
      const which = quoting === unsupported ? (unsupported === 1 ? "it quotes" : "they quote")
        : `${quoting} of them ${quoting === 1 ? "quotes" : "quote"}`;
      notes.push(el("p", { class: "state-box weak", "data-state": "unsupported" },
        el("strong", { text: "Unsupported sentences. " }),
        `${plural(unsupported, "sentence")} of the answer ${unsupported === 1 ? "is" : "are"} not supported by ` +
        (againstContext ? "the context (the answer cites no passage)" : "the passages cited") +
        (quoting ? ` (${which} text ${held} not hold)` : "") +
        `: ${unsupported === 1 ? "it is" : "they are"} marked.`));
    }
    // how the question's form was read (the list and hypothetical readings), as gemrag ask says it
    const forms = [];
    if (answer.list_cue) forms.push(`a list question ("${answer.list_cue}"), asked for every item the context names`);
    if (answer.hypothetical_cue) {
      forms.push(`a hypothetical question ("${answer.hypothetical_cue}"), asked for what the context points to: ` +
        "the answer is an inference the context need not state");
    }
    if (forms.length) {
      notes.push(el("p", { class: "state-box note", "data-state": "question-form" },
        el("strong", { text: "Read as " }), `${forms.join("; and as ")}.`));
    }
    // an answer asked again because its form did not fit the question, as gemrag ask says it
    if (answer.repair) {
      const fault = answer.repair.fault === "restated"
        ? "only restated the question" : "said yes or no to a question offering alternatives";
      const kept = answer.repair.kept === "second"
        ? "the answer above is the second" : "the second had the same fault, so the first is kept";
      notes.push(el("p", { class: "state-box note", "data-state": "repair" },
        el("strong", { text: "Asked again. " }),
        `The first answer, “${answer.repair.first_answer}”, ${fault}; ${kept}.`));
    }
    // an answer asked again because the first named a worked example's name, as gemrag ask says it
    if (answer.example_copied) {
      notes.push(el("p", { class: "state-box note", "data-state": "example-copied" },
        el("strong", { text: "Asked again. " }),
        `The first answer named “${answer.example_copied}”, from the worked examples, not the context; the answer ` +
        "above was asked without the examples."));
    }
    const chosen = choiceNote(answer, state.lastChoices || []);
    if (chosen) notes.push(chosen);
    if (uncited) {
      notes.push(el("p", { class: "state-box weak", "data-state": "uncited" },
        el("strong", { text: "Uncited sentences. " }),
        `${plural(uncited, "sentence")} of the answer ${uncited === 1 ? "names" : "name"} no passage, and no passage ` +
        `of the context was found to support ${uncited === 1 ? "it" : "them"}: marked uncited.`));
    }
    if (citedAfter.length) {
      notes.push(el("p", { class: "state-box note", "data-state": "cited-after" },
        el("strong", { text: "Cited after the answer. " }),
        `${plural(citedAfter.length, "sentence")} had no marker; the passage found to support ` +
        `${citedAfter.length === 1 ? "it is" : "each is"} cited (${citedAfter.map((n) => `[${n}]`).join(", ")}, ` +
        "underlined dotted)."));
    }
    if (recited.length) {
      const changes = recited.map((v) => `${v.recited_from.map((n) => `[${n}]`).join("")} → [${v.added_citation}]`);
      notes.push(el("p", { class: "state-box note", "data-state": "recited" },
        el("strong", { text: "Re-cited. " }),
        `${plural(recited.length, "sentence")} named a passage that does not support ` +
        `${recited.length === 1 ? "it" : "them"}; another passage of the context does and is cited instead ` +
        `(${changes.join(", ")}, underlined dotted).`));
    }
    box.replaceChildren(...notes);
    box.hidden = notes.length === 0;
  }

  // a multiple-choice answer (`options`: those asked): the option chosen, and how (each option's score when the
  // server scored them: its letter's probability, averaged over the option orders, or its likelihood as the answer's
  // text), as gemrag ask says it; null for a free-form answer
  function choiceNote(answer, options) {
    if (!options.length) return null;
    const n = options.length;
    if (!Number.isInteger(answer.choice)) {
      return el("p", { class: "state-box weak", "data-state": "choice" },
        el("strong", { text: "No option chosen. " }), `The model's reply named none of the ${n} options.`);
    }
    const parts = [el("strong", { text: `Option ${LETTERS[answer.choice]} of ${n}. ` })];
    const scores = answer.option_scores || [];
    if (scores.length === n && answer.choice_scoring === "letter_probability") {
      parts.push("Chosen by the letters' probabilities: " +
        scores.map((o, i) => `${LETTERS[i]} ${Math.exp(o.score).toFixed(2)}`).join(", ") + ".");
    } else if (scores.length === n) {
      parts.push("Chosen by likelihood, the options not shown: " +
        scores.map((o, i) => `${LETTERS[i]} ${o.score.toFixed(2)}`).join(", ") + ".");
    } else parts.push("The model wrote its letter.");
    return el("p", { class: "state-box note", "data-state": "choice" }, ...parts);
  }

  window.gemrag.notes = { LETTERS, answerState, evidenceOf, isWeak, isFlagged, isCitedAfter, isRecited, isUncited };
})();
