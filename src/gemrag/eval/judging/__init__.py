"""Judging answers with an LLM or by hand: the acceptance test's judge (:mod:`~gemrag.eval.judging.judge`, its prompt
and verdict schema :mod:`~gemrag.eval.judging.prompts`) and blind judging sheets (:mod:`~gemrag.eval.judging.sheet`);
the factual-correctness judge of free-form answers (:mod:`~gemrag.eval.judging.factual`) and the judged score of a QA
evaluation (:mod:`~gemrag.eval.judging.judged`)."""
