"""The ``[answer]`` section (:class:`AnswerSettings`): how answers are generated and read, the same for every
retrieval strategy: citations, the reading of the context (quotes or notes first, shaping, self-consistency samples,
multiple-choice option orders, abstention on weak evidence, time-aware reading) and the check of each answer sentence
against its citations. The answer side (:mod:`gemrag.answers`) reads these values through :mod:`gemrag.memory`; the
section is a typed field of :class:`gemrag.config.Config`."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator


class AnswerSettings(BaseModel):
    """How answers are generated (``[answer]``).

    Attributes:
        cite: answers name the context passages they use: the prompt asks for ``[n]`` markers (multiple choice:
            the passages' numbers beside the option letter), and an answer lists the cited passages with their
            sources and spans (:mod:`gemrag.answers.answering`). None (default): cite in sentence answers and multiple
            choice (``ask``, ``chat``, the server, MCP), not in the short form of span-answer benchmarks
            (``Memory.answer(short=True)``, ``gemrag eval`` on COVID-QA, MuSiQue, HotpotQA, LoCoMo), where the
            markers cost answer quality: on 62 COVID-QA questions citing cost the embedded 1.5B 6.1 F1 / 9.7 EM
            points with dense (EM p 0.03) and 7.7 / 11.3 with fused, its answers growing from ~4 to ~10 words
            (docs/results.md, "Cited answers on and off"). True or False applies to every form; False gives the
            prompts of earlier releases (and their cached answers).
        reading: how the model reads the context before it answers (:mod:`gemrag.answers.reading`): ``"plain"``
            (the answer prompt, default), ``"quote"`` (copy the sentences used, then answer; the verified quotes
            become the citations), ``"notes"`` (chain-of-note, Yu et al. 2023: a note per passage, then answer) or
            ``"span"`` (extractive: copy the words of the context that answer, as SQuAD's span answers, Rajpurkar et
            al. 2016; the answer is those words as the passage writes them, the passage cited; multiple choice reads
            plainly).
        shape: shape the context before reading (:mod:`gemrag.answers.shaping`; no LLM call): duplicates merged
            (``shape_dedupe``), sentences trimmed to those matching the question with the memory's embedder
            (``shape_trim``, keeping at least ``shape_keep_min`` sentences a passage and every sentence within
            ``shape_margin`` cosine of the best), and ordered (``shape_order``: ``"rank"`` or ``"edges"``, the best
            passages at both ends).
        samples: self-consistency (Wang et al. 2023): ``samples`` > 1 free-form answers sampled at
            ``sample_temperature`` (seeds 1..k), and the one the others agree with most is kept
            (:mod:`gemrag.answers.consistency`); 1 (default) is one greedy answer. Multiple choice stays greedy.
        option_orders: multiple choice only: ask the choice with the options in this many cyclic orders (order i
            shows them rotated by i positions; at most one order per option) and keep the option most orders choose,
            a tie going to the original order's choice (:mod:`gemrag.answers.choices`), against a small model's
            preference for some letters or positions (Zheng et al., ICLR 2024, sections 2-3; Pezeshkpour &
            Hruschka 2023). Costs one choice call per order (the context is the prompt's shared prefix, which
            llama.cpp reuses). 1 (default) asks once, in the given order (measured on QuALITY with the 1.5B: 4
            orders did not help, docs/reading.md).
        choice_retrieval: multiple choice only: what retrieval is asked (:mod:`gemrag.memory.choice_queries`):
            ``"question"`` (default) the question as written; ``"joined"`` the question followed by every option,
            one retrieval; ``"each"`` one retrieval per option (the question followed by that option), the lists
            merged rank by rank to the budget. The one ``[answer]`` setting that changes what is retrieved (the
            query only: the strategy and budget stay); free-form questions are retrieved for as written whatever
            it says. ``"joined"`` is the recommended setting for multiple choice (QuALITY, 62 questions: +11.3
            points with the 0.5B over ``fused``, p 0.037; +3.2 and +6.5 with the 1.5B over ``dense`` and
            ``fused``, not significant; docs/reading.md); the default stays ``"question"`` until it is confirmed
            on other questions.
        choice_scoring: multiple choice only: how the option is chosen (:mod:`gemrag.answers.likelihood`).
            ``"letter"`` (default): the model is shown the lettered options and writes a letter. ``"likelihood"``:
            every option is scored as the text of the answer (its mean log-probability per token given the context
            and the question; Brown et al. 2020, section 2.4) and the best is kept, the options never shown (the
            "cloze" form of Robinson & Wingate, ICLR 2023, for models weak at binding options to letters).
            ``"calibrated"``: the same score minus the option's log-probability without the context and question
            (Brown et al. 2020, section 2.4, for reading comprehension; Holtzman et al. 2021's domain-conditional
            PMI). ``"letter_probability"``: the lettered options shown as for ``"letter"``, but every letter's
            probability read instead of one decoded, and with ``option_orders`` = k each option's probability
            averaged over the k cyclic orders (Zheng et al., ICLR 2024, section 3: the vote's probability form;
            :mod:`gemrag.answers.letter_probability`). Each needs a model that returns log-probabilities of given text
            (the embedded llama.cpp model; an HTTP chat API raises an error); none cites a passage, and
            ``option_orders`` does not apply to ``"likelihood"`` or ``"calibrated"``.
        abstain_below: abstention on weak evidence: when the best cosine between the question and a sentence of the
            context (the memory's embedder) is below this, a free-form answer is "Not found in the memory." with no
            LLM call; None (default) never abstains this way.
        dates: time-aware reading (:mod:`gemrag.answers.dates`): ``"auto"`` (default; measured on LoCoMo's
            temporal questions, docs/reading.md): a question with a time anchor ("when", "before", "in March", "the
            first time") over hits from dated sources (conversation turns with their date stamps, documents with a
            date) is answered from those hits oldest first, each prefixed with its date and its relative time
            expressions resolved (``last Sunday (= 7 May 2023)``), every other question from the context as
            retrieved (the plain prompt, its cached answers); ``"on"``: every question so; ``"off"``: the context as
            retrieved. Not ``"off"``, an index also stores each chunk's dates (rules, no LLM call).
        lists: list questions (:mod:`gemrag.answers.lists`): ``"auto"``: a free-form question that asks for several
            things ("What books has she read?", "Which cities has he visited?", "What are the names of ...") is
            asked for every one the context names, separated by commas (TREC 2003's list questions; most of
            LoCoMo's multi-hop questions are such); every other question, or every question with ``"off"``
            (default), is asked as written. No extra LLM call: one sentence more in the answer prompt.
        hypotheticals: hypothetical questions (:mod:`gemrag.answers.hypotheticals`): ``"auto"``: a free-form question
            that asks what is likely ("Would she ...?", "What might his degree be in?", "... likely ...") is asked
            for what the context points to ("Likely yes" / "Likely no" to a yes-or-no question) and the reason in a
            few words, and is not declined (the guess line replaces the "not mentioned" line for that question;
            most of LoCoMo's open-domain questions are such); every other question, or every question with
            ``"off"`` (default), is asked as written. No extra LLM call.
        repair: answers whose form does not fit their question (:mod:`gemrag.answers.repair`): ``"auto"``: a
            free-form answer that only restates the question ("What is X?" answered "X") or says yes or no to a
            question offering alternatives ("... a beach or the mountains?" answered "Yes") is asked once more from
            the same context with one sentence saying what the answer must be, and the second answer is kept unless
            it has such a fault too (Self-Refine, Madaan et al. 2023, one round, the feedback a rule's). One extra
            LLM call for such an answer only; every other answer, and every answer under ``"off"`` (default), is
            unchanged.
        question_first: every answer prompt also shows the question before the context, as well as after it, so
            that the model reads the passages knowing what it looks for (query-aware contextualization: Liu et al.,
            "Lost in the Middle", TACL 2024, section 4.2). False (default): the context, then the question, as
            every earlier release asked. No extra LLM call: the question's tokens once more in the prompt.
        demonstrations: a plain free-form answer (sentence or short form) is asked after four worked examples of
            this library's own, shown as earlier turns of the chat, each answered as the question should be (the
            phrase in the passage's words, with its unit; the final answer of a two-passage chain; a list as the
            passage writes it; :mod:`gemrag.answers.demonstrations`; few-shot prompting, Brown et al. 2020, section
            2). False (default): no examples. No extra LLM call: about 500 prompt tokens more, at the start of the
            prompt, so a backend that keeps the evaluated prefix (llama.cpp) reads them once. An answer naming an
            example's own name that neither the context nor the question holds is asked once more without the
            examples (one more call, for such an answer only). Multiple choice and the quote, notes and span readings
            keep their prompts.
        demonstrations_file: worked examples of the user's own (a TOML or JSON file; relative to the working
            directory), shown instead of the library's four when ``demonstrations`` is on: examples of the user's
            domain and answer style (:func:`gemrag.answers.demonstrations.load_demonstrations` gives the format
            and the errors; the file is read when an answer is asked, so an edit applies to the next question).
            None (default): the library's examples. Setting it with ``demonstrations`` off is an error.
        date_llm: at index time, also ask the LLM (one cached call per expression) to resolve the dated time
            expressions the rules leave ("a few days ago", "next Friday"); only when ``dates`` is not ``"off"``.
        verify: each sentence of an answer given by ``ask`` (CLI, server, MCP, ``Memory.ask``/``ask_stream``/
            ``answer``) checked against the passages it cites (:mod:`gemrag.answers.verification`): ``"flag"``
            (default) marks the unsupported ones, ``"drop"`` removes them from the text with the citations only they
            made, ``"off"`` checks nothing. The default flags: a check costs at most one short LLM call per
            sentence of more than ``verify_overlap_words`` words (the cited passages and the sentence in, ~6 tokens
            out; cached; none when overlap already flags it), no call for shorter ones, and an answer the user reads
            is worth that (docs/verification.md has the measured cost and precision). Evaluation runs never verify
            (they call the answering directly).
        verify_overlap_words: sentences of at most this many words (markers removed) are checked by token overlap,
            with no model call (default 6, the short-answer length); 0 sends every sentence to the LLM, a large
            number checks everything by overlap.
        verify_overlap_first: a sentence longer than ``verify_overlap_words`` is checked by token overlap first:
            when the cited passages do not contain its words it is flagged without a model call, and only the
            others go to the LLM (default True: on 134 hand-labelled sentences, the 0.5B judge's flag recall 44 % ->
            62 % with 19 % fewer calls, the 1.5B's 76 % -> 82 % at precision 83 % -> 77 %; docs/verification.md).
            False sends every longer sentence to the LLM.
        verify_uncited: a sentence without a marker in an answer citing elsewhere: ``"cite"`` (default) cites it
            after the answer (ALCE's post-hoc citation, Gao et al. 2023 section 4): the context passage matching it
            best (the memory's embedder; token overlap for a sentence checked by overlap) is checked as a cited one
            would be, and if it supports the sentence its ``[n]`` is added to the text; otherwise the sentence is
            flagged as uncited. ``"flag"`` flags every uncited sentence without a check. The default cites: it costs
            what the sentence would have cost with a marker (at most one short LLM call, none for a sentence of up
            to ``verify_overlap_words`` words, plus one embedder call per answer over its uncited sentences and the
            passages' sentences), and a true sentence the model forgot to mark is not flagged as unsupported.
        verify_miscited: a sentence its own markers do not support: ``"recite"`` (default) checks it against the
            passage it did not cite that matches it best (as ``verify_uncited = "cite"`` finds one) and, if that
            passage supports it, cites that passage instead (its marker replaces the sentence's own in the text;
            the check records ``recited_from``); otherwise, and under ``"flag"``, it is flagged with its own
            markers. The default re-cites: a small model often copies one passage's words and names another's
            number, and the sentence is then true but flagged; it costs at most one more check per unsupported
            sentence (one short LLM call where the sentence is checked by entailment; none by overlap).
    """

    cite: bool | None = None
    reading: Literal["plain", "quote", "notes", "span"] = "plain"
    shape: bool = False
    shape_order: Literal["rank", "edges"] = "edges"
    shape_trim: bool = True
    shape_dedupe: bool = True
    shape_keep_min: int = Field(default=2, ge=1)
    shape_margin: float = Field(default=0.25, ge=0.0, le=2.0)
    samples: int = Field(default=1, ge=1, le=15)
    sample_temperature: float = Field(default=0.7, ge=0.0, le=2.0)
    option_orders: int = Field(default=1, ge=1, le=10)
    choice_retrieval: Literal["question", "joined", "each"] = "question"
    choice_scoring: Literal["letter", "letter_probability", "likelihood", "calibrated"] = "letter"
    abstain_below: float | None = Field(default=None, ge=-1.0, le=1.0)
    dates: Literal["auto", "on", "off"] = "auto"
    lists: Literal["auto", "off"] = "off"
    hypotheticals: Literal["auto", "off"] = "off"
    repair: Literal["auto", "off"] = "off"
    question_first: bool = False
    demonstrations: bool = False
    demonstrations_file: str | None = None
    date_llm: bool = False
    verify: Literal["flag", "drop", "off"] = "flag"
    verify_overlap_words: int = Field(6, ge=0)
    verify_overlap_first: bool = True
    verify_uncited: Literal["cite", "flag"] = "cite"
    verify_miscited: Literal["recite", "flag"] = "recite"

    @model_validator(mode="after")
    def _examples_file_needs_examples(self) -> AnswerSettings:
        if self.demonstrations_file is not None and not self.demonstrations:
            raise ValueError(
                f"demonstrations_file is {self.demonstrations_file!r} but demonstrations is off: set "
                "answer.demonstrations = true to show its examples, or remove demonstrations_file"
            )
        return self

    def cites(self, *, short: bool = False) -> bool:
        """Whether an answer of this form cites: ``cite`` when set, else True for sentence and multiple-choice
        answers and False for the short (span) form (``short=True``)."""
        return self.cite if self.cite is not None else not short
