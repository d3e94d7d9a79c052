"""The KV-format study (studies/kv_formats.py) on the bundled engine: its simulation is faithful
to the engine's real fp8 cache, and the KL follows each format's precision."""

import pytest

from inference.conversations import source_conversation
from studies import kv_formats

pytestmark = pytest.mark.slow


def test_fp8_kl_is_the_e4m3_format_itself(engine):
    """The same round trip simulated with the engine's own scales gives the engine's fp8
    numbers exactly (so the simulated formats are comparable), and the KL follows each format's
    precision: int8 blocks < e4m3 < e5m2, with e4m3's error in the keys (a Hadamard rotation of
    the keys before e4m3 lowers it)."""
    prompt, cont = source_conversation(engine, 700, 100)  # (the end-to-end tests' chat, cut to 600 + 100)
    wanted = ("e4m3 K+V, " + kv_formats.ENGINE_SCALES, "int8 block-32 K+V (q8_0 layout)", "e4m3 K+V", "e4m3 K only",
              "e5m2 K+V", "e4m3 K+V, Hadamard-rotated K")
    variants = [v for v in kv_formats.VARIANTS if v[0] in wanted]
    rows = {r["variant"]: r["mean_kl"] for r in kv_formats.study(engine, prompt, cont, variants)}
    print("\n[kv formats, 600+100 tokens] " + ", ".join(f"{k}: {v:.3g}" for k, v in rows.items()))
    assert rows["e4m3 K+V, " + kv_formats.ENGINE_SCALES] == pytest.approx(rows["engine fp8_e4m3 (real)"], rel=1e-6)
    assert rows["int8 block-32 K+V (q8_0 layout)"] < rows["e4m3 K+V"] / 5
    assert rows["e4m3 K+V"] < rows["e5m2 K+V"]
    assert rows["e4m3 K only"] > rows["e4m3 K+V"] / 2  # the keys carry the error
    assert rows["e4m3 K+V, Hadamard-rotated K"] < rows["e4m3 K+V"]
