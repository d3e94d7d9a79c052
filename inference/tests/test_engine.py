"""Engine behaviour: continuous batching, seeded reproducibility, stops, logprobs vs teacher
forcing, preemption, divergence, and clear errors for bad input."""

from __future__ import annotations


import pytest
import torch

from inference.divergence import teacher_forced_hidden
from inference.engine import EngineError, GenerationRequest, SamplingParams
from kernels.selector import KernelUnavailableError
from kernels.settings import KernelSettings, KernelSettingsError

pytestmark = pytest.mark.slow  # (every test drives the real model; a few pick it by dtype at run time)

STOCK = KernelSettings()


def chat(engine, text):
    return engine.apply_chat_template([{"role": "user", "content": text}])


def req(rid, prompt, **sampling):
    kernel = sampling.pop("kernel", STOCK)
    return GenerationRequest(rid, prompt, SamplingParams(**sampling), kernel)


def run_events(engine, requests, *, add_after_steps=None):
    """Drive step() by hand; `add_after_steps` = (n, [requests]) joins requests mid-flight."""
    for r in requests:
        engine.add_request(r)
    events, steps = {}, 0
    while engine.has_work() or (add_after_steps and add_after_steps[1]):
        if add_after_steps and steps == add_after_steps[0]:
            for r in add_after_steps[1]:
                engine.add_request(r)
            add_after_steps = None
        for ev in engine.step():
            events.setdefault(ev.request_id, []).append(ev)
        steps += 1
    return events


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_same_seed_same_text_in_any_batch_composition(dtype, request):
    # bf16 is the production default: there, a 1-ulp difference from a batch-dependent summation
    # order (attention over the batch's longest sequence, a GEMM kernel chosen by row count)
    # flips samples within a few tokens, so every per-sequence computation must be batch invariant.
    engine = request.getfixturevalue("engine" if dtype == "fp32" else "engine_bf16")
    target = lambda: req("target", chat(engine, "Write a haiku about the sea."), temperature=1.0, top_p=0.95,
                         seed=7, max_tokens=24)
    alone = engine.generate([target()])[0]
    long_text = " ".join(f"Item {i}: the committee discussed the budget line {i * 7}." for i in range(40))
    others = [
        req("o1", chat(engine, "List three fruits."), temperature=0.6, seed=1, max_tokens=30),
        req("o2", chat(engine, "Explain gravity to a child in detail, please."), temperature=0, max_tokens=12),
        req("o3", chat(engine, "Hi"), temperature=1.0, top_k=40, seed=3, max_tokens=20,
            kernel=KernelSettings(page_size=32)),  # another cache layout in the same engine
        req("o4", chat(engine, "Summarize: " + long_text), temperature=0.6, seed=4, max_tokens=8),  # > 256 tokens
        req("o5", target().prompt_ids, temperature=1.0, top_p=0.95, seed=8, max_tokens=30),  # same prompt
    ]
    assert len(others[3].prompt_ids) > 300
    together = engine.generate([others[0], target(), *others[1:]])[1]
    assert together.token_ids == alone.token_ids and together.text == alone.text
    # Joining mid-flight, while shorter and longer sequences are decoding.
    others = [req(f"m{i}", chat(engine, f"Count to {i + 3}." + (" " + long_text) * i), temperature=0.6, seed=i,
                  max_tokens=12) for i in range(2)]
    events = run_events(engine, others, add_after_steps=(4, [target()]))
    assert [e.token_id for e in events["target"]] == alone.token_ids
    assert "".join(e.text for e in events["target"]) == alone.text
    # A different seed gives a different sample (not just a replay of the dice).
    other_seed = engine.generate([req("t2", target().prompt_ids, temperature=1.0, top_p=0.95, seed=8,
                                      max_tokens=24)])[0]
    assert other_seed.token_ids != alone.token_ids


def test_eos_ends_with_stop_and_is_not_in_the_text(engine):
    result = engine.generate([req("eos", chat(engine, "What is the capital of France?"), temperature=0,
                                  max_tokens=40)])[0]
    assert result.finish_reason == "stop"
    assert result.token_ids[-1] in engine.tokenizer.eos_token_ids
    assert "<|im_end|>" not in result.text and result.text.strip()
    assert result.completion_tokens == len(result.token_ids) < 40


def test_max_tokens_ends_with_length(engine):
    result = engine.generate([req("len", chat(engine, "Write a long essay about rivers."), temperature=0,
                                  max_tokens=5)])[0]
    assert result.finish_reason == "length" and result.completion_tokens == 5
    assert result.text == engine.tokenizer.decode(result.token_ids)


def test_stop_strings_cut_the_text_and_stream_consistently(engine):
    prompt = chat(engine, "Write a long essay about rivers.")
    full = engine.generate([req("full", prompt, temperature=0, max_tokens=30)])[0]
    words = full.text.split()
    stop = " " + words[4]  # a multi-character stop string in the middle of the text
    cut = full.text[: full.text.index(stop)]
    events = run_events(engine, [req("stop", prompt, temperature=0, max_tokens=30, stop=(stop, "NEVER-SEEN"))])
    evs = events["stop"]
    assert evs[-1].finished and evs[-1].finish_reason == "stop"
    assert "".join(e.text for e in evs) == cut
    assert all(not e.finished for e in evs[:-1])
    assert len(evs) < len(full.token_ids)


def test_logprobs_agree_with_teacher_forcing(engine):
    prompt = chat(engine, "Describe a sunset.")
    result = engine.generate([req("lp", prompt, temperature=0.6, seed=11, max_tokens=20, logprobs=True,
                                  top_logprobs=3)])[0]
    assert len(result.logprobs) == len(result.token_ids) == len(result.top_logprobs)
    forced = engine.divergence(prompt, result.token_ids, STOCK, STOCK, top_k=3)
    assert torch.allclose(torch.tensor(result.logprobs), torch.tensor(forced["reference"]["logprobs"]), atol=1e-4)
    for top, forced_top in zip(result.top_logprobs, forced["reference"]["top_logprobs"]):
        assert [t[1] for t in top] == [t[1] for t in forced_top]
        assert [t[0] for t in top] == [engine.tokenizer.token_str(t[1]) for t in top]
        assert top[0][2] >= top[1][2] >= top[2][2]


def test_preempted_sequences_resume_with_the_same_samples(engine):
    prompts = [chat(engine, f"Tell me fact number {i} about owls.") for i in range(3)]
    make = lambda: [req(f"p{i}", p, temperature=0.6, seed=i, max_tokens=16) for i, p in enumerate(prompts)]
    roomy = engine.generate(make())
    tight = engine.fork(max_cache_tokens=len(prompts[0]) * 2 + 48)  # fits ~2 sequences at a time
    squeezed = tight.generate(make())
    assert [r.token_ids for r in squeezed] == [r.token_ids for r in roomy]
    group = tight._groups[STOCK.cache_key]
    assert group.allocator.num_free == group.allocator.num_pages  # every page came back


SHARED_KERNELS = [
    STOCK,
    KernelSettings(attention="sparse", sparse_budget=64, kv_cache_dtype="fp8_e4m3"),  # reads the copied page's bounds
]


@pytest.mark.parametrize("kernel", SHARED_KERNELS, ids=["dense", "sparse-fp8"])
@pytest.mark.parametrize("length", [311, 320], ids=["partial-last-page", "whole-pages"])
def test_samples_of_one_prompt_share_its_prefill_and_pages(engine, kernel, length):
    """n samples of one prompt: one prefill, the prompt's full pages held once, the last partly
    filled page copied per sample; every sample as it would be alone, in a cache that could not
    hold n separate copies of the prompt."""
    notes = " ".join(f"Note {i}: the river rose {i * 3} cm overnight." for i in range(60))
    head = engine.tokenizer.encode("<|im_start|>system\n" + notes)
    tail = engine.tokenizer.encode("<|im_end|>\n<|im_start|>user\nTell me a story about a cat.<|im_end|>\n"
                                   "<|im_start|>assistant\n")
    prompt = head[: length - len(tail)] + tail  # (exactly `length` tokens, ending where a reply starts)
    assert len(prompt) == length
    make = lambda i: req(f"s{i}", prompt, temperature=0.8, seed=i, max_tokens=6, kernel=kernel)
    alone = [engine.fork().generate([make(i)])[0].token_ids for i in range(4)]
    ps = kernel.page_size
    # Room for the prompt once plus a few pages per sample: 4 separate copies would not fit.
    tight = engine.fork(max_cache_tokens=(length // ps + 4 * 2 + 1) * ps)
    group_pages = tight.max_cache_tokens // ps
    assert 4 * -(-(length + 1) // ps) > group_pages
    for i in range(4):
        tight.add_request(make(i))
    first = {ev.request_id for ev in tight.step()}
    assert first == {f"s{i}" for i in range(4)}  # all four admitted and prefilled in one step
    assert tight.prefill_tokens == length and tight.shared_prefill_tokens == 3 * length
    group = tight._groups[kernel.cache_key]
    held = {p for s in tight._running for p in s.pages}
    assert len(held) == length // ps + 4 * (-(-(length + 1) // ps) - length // ps)
    out = {f"s{i}": [] for i in range(4)}
    for s in tight._running:
        out[s.id] = s.tokens[length:]
    while tight.has_work():
        for ev in tight.step():
            out[ev.request_id].append(ev.token_id)
    assert [out[f"s{i}"] for i in range(4)] == alone
    assert len({tuple(a) for a in alone}) > 1  # (different seeds: different samples)
    assert group.allocator.num_free == group.allocator.num_pages  # every reference given back


def test_settings_of_one_cache_layout_share_a_prompts_prefill(engine):
    """An experiment's requests for one conversation under several settings of one cache layout
    (dense, sparse budgets) arriving together: one prefill for all of them, and each sample
    exactly as it would be alone; another layout (page size 32) prefills on its own."""
    prompt = chat(engine, "Describe the water cycle for a school report.")
    kernels = [STOCK, KernelSettings(attention="sparse", sparse_budget=32, sink_pages=1, local_pages=1),
               KernelSettings(attention="sparse", sparse_budget=48)]
    make = lambda: [req(f"{k.label}-{i}", prompt, temperature=0.6, seed=i, max_tokens=8, kernel=k)
                    for k in kernels for i in range(2)]
    alone = [engine.fork().generate([r])[0].token_ids for r in make()]
    together = engine.fork()
    other = req("page32", prompt, temperature=0.6, seed=0, max_tokens=8, kernel=KernelSettings(page_size=32))
    results = together.generate([*make(), other])
    assert [r.token_ids for r in results[:-1]] == alone
    assert together.prefill_tokens == 2 * len(prompt)  # one per cache layout
    assert together.shared_prefill_tokens == 5 * len(prompt)


def test_preempting_a_sample_keeps_the_pages_its_siblings_share(engine):
    prompt = chat(engine, "Tell me everything you know about owls, in detail.")
    make = lambda: [req(f"o{i}", prompt, temperature=0.6, seed=i, max_tokens=40) for i in range(4)]
    roomy = engine.fork().generate(make())
    ps = STOCK.page_size
    # The shared prompt and a page each fit; growing 40 tokens each does not: the youngest are
    # preempted (dropping their references) and recomputed later on their own.
    tight = engine.fork(max_cache_tokens=(-(-len(prompt) // ps) + 4 + 3) * ps)
    squeezed = tight.generate(make())
    assert [r.token_ids for r in squeezed] == [r.token_ids for r in roomy]
    assert tight.shared_prefill_tokens >= 3 * len(prompt)
    assert tight.prefill_tokens > len(prompt)  # someone was preempted and recomputed
    group = tight._groups[STOCK.cache_key]
    assert group.allocator.num_free == group.allocator.num_pages


def test_teacher_forcing_runs_per_op_wherever_its_queries_fall(engine_bf16, monkeypatch):
    """divergence() gives its queries one sequence's block-table row. With a prompt one short of
    a page, two queries write two pages; they must still take the per-op path (not the fused
    decode layer of a decode step), so the numbers do not depend on the prompt's length modulo
    the page size."""
    from kernels import cpu as kernels_cpu

    calls = []
    real = kernels_cpu.decode_layer
    monkeypatch.setattr(kernels_cpu, "decode_layer", lambda *a: calls.append(1) or real(*a))
    base = chat(engine_bf16, "Tell me about owls and their habits in winter.")
    for length in (STOCK.page_size * 2 - 1, STOCK.page_size * 2 - 2):
        prompt = base[:length]
        engine_bf16.divergence(prompt, base[length:length + 3], STOCK, STOCK)
    assert calls == []


def test_a_failing_prefill_gives_its_pages_back(engine, monkeypatch):
    """A forward pass that raises (a broken kernel) takes its requests down with it, but not the
    cache: their pages, shared ones included, return to the pool and the engine keeps serving."""
    from inference import scheduler as scheduler_module

    small = engine.fork(max_cache_tokens=1024)
    prompt = chat(engine, "Tell me a story.")

    def broken(*a, **k):
        raise RuntimeError("kernel exploded")

    group = None
    for target, name in ((small, "model"), (scheduler_module, "sample")):  # the forward pass, then the sampler
        for i in range(3):
            small.add_request(req(f"f{i}", prompt, temperature=0.6, seed=i, max_tokens=4))
        monkeypatch.setattr(target, name, type("Broken", (), {"__call__": staticmethod(broken)})())
        with pytest.raises(RuntimeError, match="exploded"):
            small.step()
        monkeypatch.undo()
        group = small._groups[STOCK.cache_key]
        assert group.allocator.num_free == group.allocator.num_pages and not small.has_work()
        again = small.generate([req("f0", prompt, temperature=0.6, seed=0, max_tokens=4)])[0]  # the id is free again
        assert again.completion_tokens == 4


def test_a_failing_fp8_calibration_leaves_no_uncalibrated_cache(engine, monkeypatch):
    """The fp8 scales come from a fixed calibration text when the cache is made. If that pass
    fails, no cache is kept: the next request must not calibrate it from its own keys."""
    fp8 = KernelSettings(kv_cache_dtype="fp8_e4m3")
    prompt = chat(engine, "Tell me a story.")
    small = engine.fork(max_cache_tokens=1024)
    monkeypatch.setattr(small, "model", type("Broken", (), {"__call__": staticmethod(lambda *a, **k: 1 / 0)})())
    small.add_request(req("c0", prompt, temperature=0, max_tokens=2, kernel=fp8))
    with pytest.raises(ZeroDivisionError):
        small.step()
    monkeypatch.undo()
    assert fp8.cache_key not in small._groups
    small.generate([req("c1", prompt, temperature=0, max_tokens=2, kernel=fp8)])
    fresh = engine.fork(max_cache_tokens=1024)
    fresh.generate([req("c2", chat(engine, "Something else entirely, please."), temperature=0, max_tokens=2,
                        kernel=fp8)])
    assert torch.equal(small._groups[fp8.cache_key].cache.k_scale, fresh._groups[fp8.cache_key].cache.k_scale)


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_divergence_prefills_once_for_two_settings_of_one_cache_layout(dtype, request):
    """Two settings of one cache layout share the teacher-forced prefill; each decode pass still
    sees exactly the cache it would have alone (the continuation's page bounds put back), so the
    hidden states are the same bits as two separate passes, in either order."""
    engine = request.getfixturevalue("engine" if dtype == "fp32" else "engine_bf16")
    text = " ".join(f"Line {i}: the ferry left at {i + 6} o'clock with {i * 13} passengers." for i in range(30))
    ids = engine.tokenizer.encode(text)
    prompt, cont = ids[:300], ids[300:340]
    assert len(prompt) % STOCK.page_size and len(cont) == 40
    sparse = KernelSettings(attention="sparse", sparse_budget=64, sink_pages=1, local_pages=1)
    assert sparse.cache_key == STOCK.cache_key
    with torch.inference_mode():
        alone = {s: teacher_forced_hidden(engine, prompt, cont, s)[0] for s in (STOCK, sparse)}
        for order in ((STOCK, sparse), (sparse, STOCK)):
            together = teacher_forced_hidden(engine, prompt, cont, *order)
            for s, h in zip(order, together):
                assert torch.equal(h, alone[s]), (order, s)
    assert not torch.equal(alone[STOCK], alone[sparse])  # (the settings differ here)
    with pytest.raises(ValueError, match="cache layout"):
        teacher_forced_hidden(engine, prompt, cont, STOCK, KernelSettings(page_size=32))


def test_block_allocator_counts_references():
    from inference.scheduler import BlockAllocator

    a = BlockAllocator(4)
    pages = a.allocate(2)
    assert a.share(pages) == pages and a.num_free == 2
    a.free(pages)
    assert a.num_free == 2  # still held once
    a.free(pages)
    assert a.num_free == 4
    with pytest.raises(ValueError, match="freed more often"):
        a.free(pages[:1])
    with pytest.raises(ValueError, match="not allocated"):
        a.share([3])
    held = a.allocate(2)
    with pytest.raises(ValueError, match="freed more often"):
        a.free([held[0], held[0]])  # one reference, dropped twice: refused, and nothing changed
    with pytest.raises(ValueError, match="not allocated"):
        a.share([held[1], pages[0]])
    a.free(held)
    assert a.num_free == 4
    with pytest.raises(MemoryError):
        a.allocate(5)


def test_abort_frees_pages_and_stops_events(engine):
    small = engine.fork(max_cache_tokens=512)
    small.add_request(req("a", chat(engine, "Tell me a story."), temperature=0.6, seed=1, max_tokens=50))
    small.add_request(req("b", chat(engine, "Tell me a joke."), temperature=0.6, seed=2, max_tokens=3))
    small.step()
    assert small.abort("a") and not small.abort("a")
    seen = set()
    while small.has_work():
        seen |= {e.request_id for e in small.step()}
    assert seen == {"b"}
    group = small._groups[STOCK.cache_key]
    assert group.allocator.num_free == group.allocator.num_pages


def test_divergence_between_kernel_settings(engine):
    prompt = chat(engine, "Write a paragraph about the history of Rome and its emperors.")
    cont = engine.generate([req("d", prompt, temperature=0, max_tokens=24)])[0].token_ids
    same = engine.divergence(prompt, cont, STOCK, KernelSettings(attention="sparse", sparse_budget=4096))
    assert same["max_kl"] < 1e-6 and same["top1_agreement"] == 1.0 and same["first_over_threshold"] is None
    tiny = KernelSettings(attention="sparse", page_size=8, sparse_budget=24, sink_pages=1, local_pages=2)
    sparse = engine.divergence(prompt, cont, STOCK, tiny, kl_threshold=0.0, top_k=2, return_distributions=True)
    assert len(sparse["kl"]) == len(cont) == sparse["num_tokens"]
    assert sparse["kl"][0] < 1e-6  # position 0 comes from the (dense) prefill in both
    assert sparse["max_kl"] > 1e-4 and sparse["first_over_threshold"] is not None
    dist = torch.tensor(sparse["candidate"]["distributions"])
    assert dist.shape == (len(cont), engine.config.vocab_size)
    assert torch.allclose(dist.sum(-1), torch.ones(len(cont)), atol=1e-4)
    lp = torch.tensor(sparse["candidate"]["logprobs"])
    assert torch.allclose(dist[torch.arange(len(cont)), torch.tensor(cont)].log(), lp, atol=1e-4)
    assert "distributions" not in same["reference"]
    fp8 = engine.divergence(prompt, cont, STOCK, KernelSettings(kv_cache_dtype="fp8_e4m3"), top_k=0)
    assert 0 < fp8["mean_kl"] < 0.05 and fp8["top1_agreement"] >= 0.8  # quantization noise, not garbage


def test_bad_input_raises_clear_errors(engine, monkeypatch):
    # kernels/tests' conftest turns the Triton interpreter on for the whole session; without it
    # (a CPU engine in production) asking for Triton must be a clear error.
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    prompt = chat(engine, "Hi")
    with pytest.raises(EngineError, match="context"):
        engine.add_request(req("long", [100] * engine.config.max_seq_len, max_tokens=1))
    with pytest.raises(EngineError, match="KV cache"):
        engine.fork(max_cache_tokens=64).add_request(req("big", [100] * 100, max_tokens=1))
    with pytest.raises(EngineError, match="out of range"):
        engine.add_request(req("vocab", [engine.config.vocab_size], max_tokens=1))
    with pytest.raises(EngineError, match="empty"):
        engine.add_request(req("empty", [], max_tokens=1))
    with pytest.raises(EngineError, match="top_p"):
        SamplingParams(top_p=0)
    with pytest.raises(EngineError, match="max_tokens"):
        SamplingParams(max_tokens=0)
    with pytest.raises(KernelSettingsError, match="attention"):
        engine.check_kernel({"attention": "magic"})
    with pytest.raises(KernelUnavailableError, match="TRITON_INTERPRET|triton"):
        engine.add_request(req("tri", prompt, kernel=KernelSettings(attention="sparse", decode_kernel="triton")))
    engine.add_request(req("dup", prompt, max_tokens=1))
    with pytest.raises(EngineError, match="already"):
        engine.add_request(req("dup", prompt, max_tokens=1))
    while engine.has_work():
        engine.step()
    assert not engine.has_work()


def test_default_dtype_follows_the_cpu(monkeypatch):
    """bf16 where the CPU has bf16 dot products, or AVX2 + FMA / AVX-512 with kernels.cpu built
    (bf16 weights widened in registers); fp32 where neither holds."""
    from inference import engine as engine_module

    flags = engine_module.kernels_cpu.cpu_flags()
    native_bf16 = bool(flags & {"avx512_bf16", "amx_bf16"})
    vector = {"avx2", "fma"} <= flags or "avx512f" in flags
    expected = "bf16" if native_bf16 or (vector and engine_module.kernels_cpu.available()) else "fp32"
    assert engine_module.default_dtype() == expected
    assert engine_module.default_dtype("cuda:0") == "bf16"
    monkeypatch.setattr(engine_module.kernels_cpu, "simd_lanes", lambda: 0)
    assert engine_module.default_dtype() == ("bf16" if native_bf16 else "fp32")


# Top-1 logprobs of the fused whole-layer bf16 path against the per-op modules: two bf16
# roundings of one computation. Measured on one prompt over 16 greedy tokens, dense itself: up to
# 0.03 (Zen 3, AVX2) and 0.05-0.08 (Zen 4, AVX512-BF16); Quest budget 64 and an fp8 cache amplify
# it (a page choice or an e4m3 step can flip): 0.15 and 0.12 on Zen 4. A wrong layer is off by far
# more, and from the first tokens.
BF16_PATHS_LOGPROB_TOL = 0.25


def test_bf16_sparse_decode_runs_whole_layers_natively_with_the_per_op_numbers(engine_bf16, monkeypatch,
                                                                               skip_or_fail):
    """A bf16 sparse decode step on the CPU runs each layer as one kernels.cpu.decode_layer call
    (the Quest indexer and sparse attention inside it), as dense does. So a budget covering the
    context gives exactly dense's tokens and logprobs in bf16 too; before, sparse ran the per-op
    modules, whose bf16 rounding differs from the fused layer's (logprobs up to ~0.03 apart for
    dense itself), a difference a triage comparison would have blamed on the kernel."""
    from kernels import cpu as kernels_cpu

    if not engine_bf16.model.native_layers:
        skip_or_fail(f"no native whole-layer path on this build: kernels.cpu unavailable "
                     f"({kernels_cpu.unavailable_reason()})")
    long_text = " ".join(f"Item {i}: the committee discussed the budget line {i * 7}." for i in range(30))
    prompt = chat(engine_bf16, "Summarize: " + long_text)
    tight = KernelSettings(attention="sparse", sparse_budget=64)
    run = lambda kernel, rid: engine_bf16.generate([req(rid, prompt, temperature=0, max_tokens=16, logprobs=True,
                                                        kernel=kernel)])[0]
    calls = []
    real = kernels_cpu.decode_layer
    monkeypatch.setattr(kernels_cpu, "decode_layer", lambda *a: calls.append(a[6]) or real(*a))
    fused = run(tight, "fused")
    assert calls and all(isinstance(layout, kernels_cpu.SparseDecodeLayout) for layout in calls)
    monkeypatch.setattr(engine_bf16.model, "native_layers", [])  # the per-op modules, the same weights
    per_op = run(tight, "per-op")
    # The same selection and attention, another bf16 rounding: greedy tokens agree until a near tie
    # (on a Zen 4 AVX512-BF16 build one came at token 11 of 16), and every top-1 logprob up to
    # there, the tie included, within BF16_PATHS_LOGPROB_TOL.
    n = next((i for i, (a, b) in enumerate(zip(fused.token_ids, per_op.token_ids)) if a != b), len(fused.token_ids))
    assert n >= 4
    assert max(abs(a - b) for a, b in zip(fused.logprobs[:n + 1], per_op.logprobs[:n + 1])) < BF16_PATHS_LOGPROB_TOL
    monkeypatch.undo()
    dense, full = run(STOCK, "dense"), run(KernelSettings(attention="sparse", sparse_budget=4096), "full")
    assert full.token_ids == dense.token_ids and full.logprobs == dense.logprobs
    assert fused.token_ids != dense.token_ids or fused.logprobs != dense.logprobs  # budget 64 is sparse here


@pytest.mark.parametrize("attention", ["dense", "sparse"])
def test_bf16_decode_on_an_fp8_cache_runs_whole_layers_natively(engine_bf16, monkeypatch, attention, skip_or_fail):
    """With kv_cache_dtype fp8_e4m3 (scales calibrated at start), a bf16 decode step runs each
    layer as one kernels.cpu.decode_layer call too: keys and values quantized in C exactly as
    PagedKVCache.write does (tested bit for bit in kernels/tests), read back through the same
    dequantization. The per-op modules compute the same step with another bf16 rounding, which
    fp8's coarse steps can amplify: greedy tokens agree until a near tie, and every top-1
    logprob up to there (the tie included) agrees within BF16_PATHS_LOGPROB_TOL (0.25)."""
    from kernels import cpu as kernels_cpu

    if not engine_bf16.model.native_layers:
        skip_or_fail(f"no native whole-layer path on this build: kernels.cpu unavailable "
                     f"({kernels_cpu.unavailable_reason()})")
    prompt = chat(engine_bf16, "Name three rivers of Europe and one fact about each.")
    kernel = KernelSettings(attention=attention, sparse_budget=64, kv_cache_dtype="fp8_e4m3")
    run = lambda rid: engine_bf16.generate([req(rid, prompt, temperature=0, max_tokens=12, logprobs=True,
                                                 kernel=kernel)])[0]
    calls = []
    real = kernels_cpu.decode_layer
    monkeypatch.setattr(kernels_cpu, "decode_layer", lambda *a: calls.append(a) or real(*a))
    fused = run("fp8-fused")
    assert calls and all(a[5].is_fp8 for a in calls)
    monkeypatch.setattr(engine_bf16.model, "native_layers", [])
    per_op = run("fp8-per-op")
    n = next((i for i, (a, b) in enumerate(zip(fused.token_ids, per_op.token_ids)) if a != b), len(fused.token_ids))
    assert n >= 2
    assert max(abs(a - b) for a, b in zip(fused.logprobs[:n + 1], per_op.logprobs[:n + 1])) < BF16_PATHS_LOGPROB_TOL
