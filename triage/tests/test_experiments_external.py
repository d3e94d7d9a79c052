"""An arm on an external OpenAI-compatible engine we did not write: llama.cpp's server
(llama-cpp-python[server]) serving the same GGUF as the bundled backend. It ignores `n`, so the
client falls back to one request per sample with its own seed; divergence against the bundled
stock arm is the top-k approximation from /v1/completions echo logprobs, labelled as such."""

from __future__ import annotations

import pytest

from triage.experiments import selectors, services
from triage.models import Backend, Divergence, Sample
from triage.tests.test_llama_cpp_server import service_missing

pytestmark = pytest.mark.slow
SMOLLM_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


@pytest.fixture(scope="module")
def llama_url(pytestconfig):
    try:
        import llama_cpp.server  # noqa: F401
    except ImportError as exc:
        service_missing(pytestconfig, f"needs llama-cpp-python[server] (pip install -e .[dev]): {exc}")
    from inference.gguf_loader import default_model_path
    from triage.tests.llama_cpp_server import llama_cpp_server

    with llama_cpp_server(str(default_model_path()), n_ctx=2048) as url:
        yield url


def test_an_arm_on_llama_cpp_runs_per_seed_and_gets_a_topk_divergence(bundled_backend, demo_transcripts, llama_url):
    Backend.objects.create(name="llama.cpp", kind=Backend.Kind.OPENAI, base_url=llama_url, chat_template="chatml",
                           default_system_prompt=SMOLLM_SYSTEM)
    transcript = demo_transcripts["demo-0024"]
    experiment = services.experiment_start(
        dispatch=False, transcripts=[transcript.pk], samples=3, max_tokens=12,
        arms=[{"profile": "stock"}, {"name": "llama.cpp", "profile": "stock", "backend": "llama.cpp"}])
    experiment = services.experiment_run_inline(experiment=experiment)
    detail = selectors.experiment_detail(experiment=experiment)
    assert detail["status"] == "done", detail["error"]
    arms = {a["name"]: a for a in detail["arms"]}
    runtime = arms["llama.cpp"]["runtime"]
    assert runtime["backend"]["kind"] == "openai" and runtime["kernel_sent"] is False
    assert runtime["mode"] == "per_sample" and runtime["capabilities"]["n"] is False  # llama.cpp ignores n
    samples = Sample.objects.filter(arm__name="llama.cpp", arm__experiment=experiment).order_by("index")
    assert [s.seed for s in samples] == [0, 1, 2] and all(s.text and s.logprobs for s in samples)
    assert Backend.objects.get(name="llama.cpp").capabilities["mode"] == "per_sample"  # probed once, cached
    kernel = Divergence.objects.get(experiment=experiment, arm__name="llama.cpp", kind="kernel")
    assert kernel.method == "topk", kernel.note
    assert "approximation" in kernel.note and kernel.summary["n"] > 0
    assert 0 <= kernel.summary["mean"] < 1.0  # same weights, another engine's numerics
    rescore = Divergence.objects.get(experiment=experiment, arm__name="llama.cpp", kind="decode_prefill")
    assert rescore.method == "exact", rescore.note
    assert rescore.summary["mean_abs_diff"] < 0.2  # its decode agrees with its own prefill
    assert experiment.verdict in ("inconclusive", "sampling", "model_or_prompt", "kernel")
