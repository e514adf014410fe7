"""The smallest real trigger of "the llama.cpp decoder is busy" (issue 29 follow-up, docs/results.md).

On the embedded model, with a fresh LLM cache: one structured call whose JSON ``--max-tokens`` (default 4) cuts short
on every attempt, so ``complete_structured`` raises ``StructuredOutputError`` (as the COVID-QA judge did on a
runaway number), then one plain call on the same model. Before the fix the second call met the decoder still held
by the first call's suspended batch; after it, the call answers. Prints both outcomes and the wall time (model load
included)::

    python benchmarks/decoder_busy.py --model qwen2.5-coder-0.5b --threads 1
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path


def main(argv: Sequence[str] | None = None) -> int:
    """Run the two calls; exit code 0 when the second one answered, 1 when it raised.

    Raises:
        ModelNotAvailableError: llama-cpp-python or the model's parts are not installed.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-0.5b", help="a known model name or a GGUF path")
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp threads")
    parser.add_argument("--max-tokens", type=int, default=4, help="completion limit of the structured call")
    args = parser.parse_args(argv)

    from gemrag.errors import GemragError, StructuredOutputError
    from gemrag.models.cache import CachedLLM
    from gemrag.models.llama.backend import LlamaCppLLM
    from gemrag.models.meter import UsageMeter
    from gemrag.models.structured import complete_structured
    from gemrag.store import Store
    from gemrag.strategies.gem.prompts import UtilityQuestions

    start = time.perf_counter()
    backend = LlamaCppLLM(args.model, n_threads=args.threads, n_parallel=1, n_ctx=2048)
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "memory")
        llm = CachedLLM(backend, store, UsageMeter(store))
        prompt = [{"role": "user", "content": "Write three questions about the sentence: The cat sat on the mat."}]
        try:
            complete_structured(llm, prompt, UtilityQuestions, max_tokens=args.max_tokens)
            print("structured call: valid (--max-tokens cut nothing: lower it)")
        except StructuredOutputError as exc:
            print(f"structured call: StructuredOutputError: {str(exc)[:100]}")
        try:
            out = llm.complete([{"role": "user", "content": "Say hello."}], max_tokens=8)
            print(f"next call: answered {out.text!r}")
            code = 0
        except GemragError as exc:
            print(f"next call: {type(exc).__name__}: {exc}")
            code = 1
        store.close()
    backend.close()
    print(f"wall time: {time.perf_counter() - start:.1f} s")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
