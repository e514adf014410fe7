"""Where the time of an LLM extraction call goes on the embedded llama.cpp models (a script that prints figures).

Issue 9: GEM indexing measured 11.5 s per chunk on the 1.5B model, while its raw rates predicted ~4.6 s. For each
embedded model (Qwen2.5-Coder 0.5B and 1.5B, Q4_K_M) this prints, on gemrag's real utility-question calls
(``utility_questions_prompt`` + ``utility_questions_schema``, m = 5, the build's ``max_tokens``) over 100-token
chunks of the shipped QuALITY story:

1. raw rates: prompt tokens/s and generated tokens/s of ``llama_decode`` alone (one sequence, no grammar);
2. the grammar: its construction per call (schema -> GBNF in Python, GBNF parse in llama.cpp; now: a cached
   clone), its cost per generated token applied to the whole ~150k-token vocabulary (llama-cpp-python's sampler
   chain) and checked on the argmax only (gemrag's decoder), and generated tokens/s with it;
3. per call: wall time split into prompt, generation and overhead (everything else: sampling and grammar, chat
   template, tokenization, Python), and the ratio wall / (prompt tokens / raw prompt rate + completion tokens
   / raw generation rate), BEFORE (``Llama.create_chat_completion`` with ``response_format`` and the old
   prompt, chunk first — what gemrag did until issue 9) and AFTER (``LlamaCppLLM.complete``: prompt prefix
   kept in the KV cache, grammar built once and checked on the argmax), with prefix reuse on and off;
4. batched decoding: ``LlamaCppLLM.complete_iter`` over the same calls with n_parallel = 1, 2, 4, 8: aggregate
   generated tokens/s, calls/s, and how many greedy answers equal the sequential ones.

    python benchmarks/bench_llm.py                         # both models, each in its own child process
    python benchmarks/bench_llm.py --model qwen2.5-coder-0.5b --calls 8 --batch-calls 16
    python benchmarks/bench_llm.py --contention            # also: one call while a busy process holds a core

Timings are only meaningful with nothing else heavy running: the script prints the load average. No pass/fail.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
STORY = REPO / "examples" / "quality" / "lost_in_translation.txt"
MODELS = ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")
M = 5  # utility questions per chunk (GemConfig.questions default)


def old_utility_questions_prompt(chunk: str, m: int) -> list[dict[str, str]]:
    """The utility-question prompt before issue 9 (chunk first, instructions after), for the BEFORE rows."""
    return [
        {
            "role": "system",
            "content": "You write reading-comprehension questions about a passage from a story or document.",
        },
        {
            "role": "user",
            "content": (
                f'Passage:\n"""\n{chunk}\n"""\n\n'
                f"Write {m} different questions that this passage answers. Ask about specific facts in it: what "
                "happens, who does what, why, how, when, and descriptions. Use the names and details from the "
                "passage so each question makes sense on its own. Do not ask about the author, the narrator or "
                "the passage itself.\n"
                'Reply with JSON: {"questions": ["...", ...]}'
            ),
        },
    ]


def chunks(n: int) -> list[str]:
    """``n`` real 100-token chunks of the shipped story (gemrag's chunker and MiniLM tokenizer), title skipped."""
    from gemrag.ingest.chunker import chunk_text
    from gemrag.ingest.tokenizer import minilm_tokenizer

    all_chunks = [c.text for c in chunk_text(STORY.read_text(encoding="utf-8"), minilm_tokenizer(), 100)]
    return all_chunks[1 : n + 1]


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


MAX_TOKENS: int | None = None  # --max-tokens (smoke runs); None = the build's limit


def max_tokens() -> int:
    from gemrag.strategies.gem.prompts import MAX_QUESTION_CHARS

    return MAX_TOKENS or (MAX_QUESTION_CHARS // 3 + 8) * M + 16  # as gemrag.strategies.gem.utility_questions


def requests(texts: list[str]) -> list[Any]:
    from gemrag.models.batch import CompletionRequest
    from gemrag.strategies.gem.prompts import utility_questions_prompt, utility_questions_schema

    schema = utility_questions_schema(M)
    return [CompletionRequest(utility_questions_prompt(t, M), schema, max_tokens()) for t in texts]


def timed_call(llm: Any, request: Any, *, reuse: bool = True) -> dict[str, Any]:
    """One ``LlamaCppLLM.complete`` (its two steps, to read the decoder's own timings) with its wall split."""
    decoder = llm.decoder()
    if not reuse:
        decoder.clear()
    t0 = time.perf_counter()
    prepared = llm.prepare(request)
    ((_, result),) = list(decoder.run([prepared]))
    completion = llm._completion(prepared.tokens, result, True, 0.0)
    wall = time.perf_counter() - t0
    return {
        "wall": wall,
        "prompt_s": result.prompt_seconds,
        "gen_s": result.generation_seconds,
        "sample_s": result.sampling_seconds,
        "prompt_tokens": result.prompt_tokens,
        "reused": result.reused_tokens,
        "completion_tokens": len(result.tokens),
        "gen_decodes": len(result.tokens) - (result.finish_reason == "length"),
        "rejections": result.grammar_rejections,
        "text": completion.text,
        "valid": isinstance(completion.parsed, dict) and len(completion.parsed.get("questions", [])) == M,
    }


def raw_rates(llm: Any, reqs: list[Any]) -> dict[str, float]:
    """Prompt and generated tokens/s of llama_decode alone: no reuse, no grammar (the decoder's own timers)."""
    from dataclasses import replace

    decoder = llm.decoder()
    p_tok = p_s = g_tok = g_s = 0.0
    for request in reqs:
        decoder.clear()
        prepared = replace(llm.prepare(request), grammar=None, max_tokens=min(64, max_tokens()))
        ((_, r),) = list(decoder.run([prepared]))
        p_tok += r.prompt_tokens - r.reused_tokens
        p_s += r.prompt_seconds
        g_tok += len(r.tokens) - (r.finish_reason == "length")
        g_s += r.generation_seconds
    return {"prompt_tps": p_tok / p_s, "gen_tps": g_tok / g_s}


def grammar_costs(llm: Any, reqs: list[Any]) -> dict[str, float]:
    """Construction per call and the per-token cost of the grammar, whole vocabulary vs argmax check."""
    from dataclasses import replace

    import llama_cpp
    from llama_cpp.llama_grammar import LlamaGrammar

    from gemrag.models.llama.batch import GrammarCache
    from gemrag.models.llama.chat import grammar_for_schema

    schema_json = json.dumps(reqs[0].schema)
    t0 = time.perf_counter()
    for _ in range(20):
        gbnf = LlamaGrammar.from_json_schema(schema_json, verbose=False)._grammar
    convert = (time.perf_counter() - t0) / 20
    decoder = llm.decoder()
    parse = clone = 0.0
    for _ in range(5):
        cache = GrammarCache(llama_cpp, decoder.vocab)
        t0 = time.perf_counter()
        cache.template(gbnf)
        parse += (time.perf_counter() - t0) / 5
        t0 = time.perf_counter()
        llama_cpp.llama_sampler_free(cache.clone(gbnf))
        clone += (time.perf_counter() - t0) / 5
        cache.close()
    assert gbnf == grammar_for_schema(reqs[0].schema)
    out: dict[str, float] = {"convert_s": convert, "parse_s": parse, "clone_s": clone}
    for mode in ("full", "argmax"):
        decoder.grammar_first = mode == "full"
        calls = [timed_call(llm, r, reuse=False) for r in reqs]
        decoder.grammar_first = False
        steps = sum(c["completion_tokens"] + 1 for c in calls)
        out[f"{mode}_per_token_s"] = sum(c["sample_s"] for c in calls) / steps
        out[f"{mode}_gen_tps"] = sum(c["gen_decodes"] for c in calls) / sum(c["gen_s"] + c["sample_s"] for c in calls)
        out[f"{mode}_texts"] = [c["text"] for c in calls]  # type: ignore[assignment]
        out["rejections"] = sum(c["rejections"] for c in calls)
    unbounded = json.loads(schema_json)
    del unbounded["properties"]["questions"]["items"]["maxLength"]
    calls = [timed_call(llm, replace(r, schema=unbounded), reuse=False) for r in reqs]
    out["unbounded_per_token_s"] = sum(c["sample_s"] for c in calls) / sum(c["completion_tokens"] + 1 for c in calls)
    out["same_answers"] = sum(a == b for a, b in zip(out.pop("full_texts"), out.pop("argmax_texts"), strict=True))  # type: ignore[arg-type]
    return out


def before_calls(llm: Any, texts: list[str], warm_up: str) -> list[dict[str, Any]]:
    """The path before issue 9: a full ``Llama`` context, ``create_chat_completion`` with ``response_format``
    (grammar built and applied to the whole vocabulary per call) and the old prompt (chunk first)."""
    import llama_cpp
    from llama_cpp import Llama

    from gemrag.strategies.gem.prompts import utility_questions_schema

    old = Llama(
        model_path=str(llm.model_path),
        n_ctx=llm.context_window,
        n_threads=llm.n_threads,
        n_batch=llm.n_batch,
        seed=llm.seed,
        verbose=False,
    )
    fmt = {"type": "json_object", "schema": utility_questions_schema(M)}
    out = []
    old.create_chat_completion(messages=old_utility_questions_prompt(warm_up, M), max_tokens=4, temperature=0.0)
    for text in texts:
        llama_cpp.llama_perf_context_reset(old.ctx)
        t0 = time.perf_counter()
        r = old.create_chat_completion(
            messages=old_utility_questions_prompt(text, M),
            response_format=fmt,
            max_tokens=max_tokens(),
            temperature=0.0,
            seed=llm.seed,
        )
        wall = time.perf_counter() - t0
        perf = llama_cpp.llama_perf_context(old.ctx)  # llama.cpp's own timers: multi-token / one-token decodes
        out.append(
            {
                "wall": wall,
                "prompt_s": perf.t_p_eval_ms / 1e3,
                "gen_s": perf.t_eval_ms / 1e3,
                "prompt_tokens": r["usage"]["prompt_tokens"],
                "reused": r["usage"]["prompt_tokens"] - perf.n_p_eval,
                "completion_tokens": r["usage"]["completion_tokens"],
            }
        )
    old.close()
    return out


def summarize(name: str, calls: list[dict[str, Any]], rates: dict[str, float]) -> str:
    def mean(key: str) -> float:
        return statistics.fmean(c.get(key, float("nan")) for c in calls)

    ideal = [c["prompt_tokens"] / rates["prompt_tps"] + c["completion_tokens"] / rates["gen_tps"] for c in calls]
    ratio = sum(c["wall"] for c in calls) / sum(ideal)
    decoded = [c["prompt_tokens"] - c.get("reused", 0) for c in calls]
    ideal_dec = [
        d / rates["prompt_tps"] + c["completion_tokens"] / rates["gen_tps"] for d, c in zip(decoded, calls, strict=True)
    ]
    ratio_dec = sum(c["wall"] for c in calls) / sum(ideal_dec)
    if "prompt_s" in calls[0]:
        split = f"{mean('prompt_s'):6.2f} {mean('gen_s'):6.2f} {mean('wall') - mean('prompt_s') - mean('gen_s'):6.2f}"
    else:
        split = f"{'-':>6} {'-':>6} {'-':>6}"
    return (
        f"  {name:<34} {mean('wall'):6.2f} {split} {mean('prompt_tokens'):6.0f} {statistics.fmean(decoded):6.0f} "
        f"{mean('completion_tokens'):6.1f} {ratio:6.2f} {ratio_dec:6.2f}"
    )


PARALLEL = (1, 2, 4, 8)  # --parallel


def batched(model: str, reqs: list[Any], n_threads: int | None) -> list[str]:
    from gemrag.models.llama.backend import LlamaCppLLM

    rows = []
    reference: dict[int, str] = {}
    for n in PARALLEL:
        llm = LlamaCppLLM(model, n_threads=n_threads, n_parallel=n)
        list(llm.complete_iter(reqs[:1]))  # warm up (page the weights in)
        decoder = llm.decoder()
        decoder.clear()
        before = (decoder.steps, decoder.batch_tokens, decoder.decode_seconds)
        t0 = time.perf_counter()
        results = dict(llm.complete_iter(reqs))
        wall = time.perf_counter() - t0
        steps, tokens = decoder.steps - before[0], decoder.batch_tokens - before[1]
        decode_s = decoder.decode_seconds - before[2]
        llm.close()
        gen = sum(r.usage.completion_tokens for r in results.values())
        texts = {i: r.text for i, r in results.items()}
        if not reference:
            reference = texts
        same = sum(texts[i] == reference.get(i) for i in texts)
        valid = sum(isinstance(r.parsed, dict) and len(r.parsed.get("questions", [])) == M for r in results.values())
        rows.append(
            f"  n_parallel={n:<2} {wall:7.1f} s  {gen / wall:7.1f} gen tok/s  {len(reqs) / wall:6.3f} calls/s  "
            f"same as n={PARALLEL[0]}: {same}/{len(reqs)}  valid: {valid}/{len(reqs)}  "
            f"llama_decode {decode_s / wall:.0%} of wall, "
            f"{steps} steps of {tokens / steps:.1f} tokens, {decode_s / steps * 1e3:.0f} ms each  (load {load()})"
        )
        print(rows[-1], flush=True)
    return rows


def contention(model: str, reqs: list[Any]) -> None:
    """One call with n_threads = 2 and 1 while a busy-looping child process holds one core."""
    from gemrag.models.llama.backend import LlamaCppLLM

    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(1.0)
        for threads in (os.cpu_count() or 2, 1):
            llm = LlamaCppLLM(model, n_threads=threads, n_parallel=1)
            timed_call(llm, reqs[0])
            c = timed_call(llm, reqs[1], reuse=True)
            llm.close()
            print(
                f"  busy process on one core, n_threads={threads}: wall {c['wall']:.2f} s (prompt {c['prompt_s']:.2f} "
                f"s for {c['prompt_tokens'] - c['reused']} tokens, generation {c['gen_s']:.2f} s for "
                f"{c['gen_decodes']} tokens)  (load {load()})",
                flush=True,
            )
    finally:
        busy.kill()
        busy.wait()


def run_model(model: str, n_calls: int, n_batch_calls: int, n_threads: int | None, with_contention: bool) -> None:
    from gemrag.models.llama.backend import LlamaCppLLM

    texts = chunks(max(n_calls, n_batch_calls) + 1)
    reqs = requests(texts)
    print(f"\n== {model}  (threads {n_threads or os.cpu_count()}, load {load()})", flush=True)
    llm = LlamaCppLLM(model, n_threads=n_threads, n_parallel=1)
    timed_call(llm, reqs[-1])  # warm up: page the weights in
    rates = raw_rates(llm, reqs[: min(4, n_calls)])
    print(f"  raw: prompt {rates['prompt_tps']:.1f} tok/s, generation {rates['gen_tps']:.1f} tok/s  (load {load()})")
    g = grammar_costs(llm, reqs[: min(3, n_calls)])
    print(
        f"  grammar construction per call: schema->GBNF {g['convert_s'] * 1e3:.2f} ms + llama.cpp parse "
        f"{g['parse_s'] * 1e3:.2f} ms (before, every call); cached clone {g['clone_s'] * 1e3:.3f} ms (after)"
    )
    print(
        f"  grammar per generated token: whole vocabulary {g['full_per_token_s'] * 1e3:.1f} ms, argmax check "
        f"{g['argmax_per_token_s'] * 1e3:.2f} ms ({g['rejections']} argmax tokens rejected); generation with "
        f"grammar {g['full_gen_tps']:.1f} tok/s (whole vocabulary) vs {g['argmax_gen_tps']:.1f} tok/s (argmax "
        f"check); same answers {g['same_answers']}/{min(3, n_calls)}  (load {load()})",
        flush=True,
    )
    print(
        f"  argmax check per token, strings of 8 to 160 characters (gemrag's schema) "
        f"{g['argmax_per_token_s'] * 1e3:.2f} ms vs unbounded {g['unbounded_per_token_s'] * 1e3:.2f} ms"
    )
    calls = reqs[:n_calls]
    rows = []
    reuse_on = [timed_call(llm, r) for r in calls]
    reuse_off = [timed_call(llm, r, reuse=False) for r in calls]
    llm.decoder().clear()
    rows.append(summarize("AFTER, prefix reuse on", reuse_on, rates))
    rows.append(summarize("AFTER, prefix reuse off", reuse_off, rates))
    valid = sum(c["valid"] for c in reuse_on)
    llm.close()
    before = before_calls(llm, texts[:n_calls], texts[-1])
    rows.insert(0, summarize("BEFORE (create_chat_completion)", before, rates))
    head = (
        f"  {'per utility-question call (means)':<34} {'wall':>6} {'prompt':>6} {'gen':>6} {'other':>6} "
        f"{'p.tok':>6} {'p.dec':>6} {'c.tok':>6} {'ratio':>6} {'r.dec':>6}"
    )
    print(head)
    print("\n".join(rows))
    print(f"  ({n_calls} calls each; valid answers after: {valid}/{n_calls}; load {load()})", flush=True)
    if n_batch_calls:
        print(f"  batched: complete_iter over {n_batch_calls} utility-question calls")
        batched(model, reqs[:n_batch_calls], n_threads)
    if with_contention:
        contention(model, reqs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=MODELS, help="one model in this process (default: each in a child)")
    ap.add_argument("--calls", type=int, default=6, help="sequential utility-question calls per row")
    ap.add_argument("--batch-calls", type=int, default=16, help="calls of the batched rows (0 = skip)")
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: all cores)")
    ap.add_argument("--contention", action="store_true", help="also time a call next to a busy process")
    ap.add_argument("--max-tokens", type=int, default=None, help="completion limit (default: the build's)")
    ap.add_argument("--parallel", default="1,2,4,8", help="n_parallel values of the batched rows (first = reference)")
    args = ap.parse_args()
    global MAX_TOKENS, PARALLEL
    MAX_TOKENS = args.max_tokens
    PARALLEL = tuple(int(n) for n in args.parallel.split(","))
    os.environ.setdefault("GEMRAG_SKIP_MODEL_PROBE", "1")
    if args.model:
        run_model(args.model, args.calls, args.batch_calls, args.threads, args.contention)
        return
    print(
        "columns: wall = seconds per call; prompt / gen = llama_decode seconds of its prompt / generated tokens; "
        "other = wall - prompt - gen (grammar, sampling, template, tokenization, Python); p.tok = prompt tokens, "
        "p.dec = prompt tokens decoded (not reused from the KV cache), c.tok = completion tokens; ratio = wall / "
        "(p.tok / raw prompt rate + c.tok / raw generation rate); r.dec = the same with p.dec"
    )
    for model in MODELS:
        cmd = [sys.executable, __file__, "--model", model, "--calls", str(args.calls)]
        cmd += ["--batch-calls", str(args.batch_calls)] + (["--contention"] if args.contention else [])
        cmd += ["--max-tokens", str(args.max_tokens)] if args.max_tokens else []
        cmd += ["--parallel", args.parallel]
        if args.threads:
            cmd += ["--threads", str(args.threads)]
        subprocess.run(cmd, check=True)


if __name__ == "__main__":
    main()
