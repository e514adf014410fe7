"""The HLGraphRAG acceptance test on CMU DoG (``gemrag eval cmu_dog PATH``; Zeng, "HLGraphRAG", section 4): the replay
and its runs (:mod:`~gemrag.eval.acceptance.runner`), the in-character reply's prompt
(:mod:`~gemrag.eval.acceptance.prompts`) and the counts, tests and reports (:mod:`~gemrag.eval.acceptance.report`).
The judge is :mod:`gemrag.eval.judging`."""
