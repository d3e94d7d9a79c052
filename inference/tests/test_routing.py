"""Prefix-affine routing of `ReplicaPool` (no model, no processes): fake replicas whose inbox
answers like a replica would (`accepted` for an admission, `result` for a divergence job), so
`submit()` and `divergence()` run their real routing and bookkeeping. The sequences admitted
here never finish, so each one keeps its replica busy: that is the load the router sees.

The real two-replica server is exercised in test_replicas.py.
"""

from __future__ import annotations

import asyncio
import concurrent.futures

import pytest

from inference.protocol import APIError
from inference.replica_messages import Accepted, AddRequests, ComputeDivergence, DivergenceResult, ToReplica
from inference.replicas import Replica, ReplicaPool, Submission, affinity_key

IMPL = {"attention": "DenseAttention(device=cpu, native_decode=True)", "attention_backend": "dense",
        "device": "cpu", "dtype": "fp32"}


class FakeInbox:
    """Answers `AddRequests` with `Accepted` and `ComputeDivergence` with `DivergenceResult`, on
    the event loop, as the pool's reader thread would; records what it was sent."""

    def __init__(self, pool: ReplicaPool, index: int):
        self.pool, self.index, self.sent = pool, index, []

    def put(self, message: ToReplica) -> None:
        self.sent.append(message)
        replica = self.pool.replicas[self.index]
        if isinstance(message, AddRequests):
            answer = Accepted(message.group_id, 5, {**IMPL, "device": f"cpu:{self.index}"})
        elif isinstance(message, ComputeDivergence):
            answer = DivergenceResult(message.job_id, {"replica": self.index})
        else:
            return
        self.pool._loop.call_soon(self.pool._on_message, replica, answer)


def make_pool(n: int = 2, **options) -> ReplicaPool:
    pool = ReplicaPool(["cpu"] * n, **options)
    pool.replicas = [Replica(index=i, device="cpu", process=None, inbox=FakeInbox(pool, i), conn=None, state="ready")
                     for i in range(n)]
    return pool


def chat(content: str, kernel: dict | None = None) -> dict:
    return {"messages": [{"role": "user", "content": content}], "kernel": kernel or {"attention": "dense"},
            "max_tokens": 2, "max_tokens_limit": 8192}


def samplings(n: int, seed: int = 0) -> list[dict]:
    return [{"temperature": 1.0, "seed": seed + i} for i in range(n)]


def run(pool: ReplicaPool, coro_factory):
    async def main():
        pool._loop = asyncio.get_running_loop()
        return await coro_factory()
    # A thread of its own: in a whole-suite run Playwright's sync API (browser tests) keeps an
    # event loop running on the main thread, where asyncio.run() refuses to start another.
    with concurrent.futures.ThreadPoolExecutor(1) as executor:
        return executor.submit(asyncio.run, main()).result()


DENSE = {"attention": "dense"}
SPARSE = {"attention": "sparse", "sparse_budget": 64}


def test_affinity_key_is_the_prompt_not_the_kernel_or_sampling():
    a = affinity_key(chat("hello", DENSE))
    assert a == affinity_key(chat("hello", SPARSE)) == affinity_key({**chat("hello"), "max_tokens": 99})
    assert a != affinity_key(chat("hello!"))
    assert affinity_key({"prompt": "hello"}) != affinity_key({"prompt": "hello!"})
    assert affinity_key({"messages": None, "prompt": "x"}) == affinity_key({"prompt": "x"})
    # A divergence job's messages payload has the same key as the chat completion's.
    assert affinity_key({"messages": chat("hello")["messages"], "prompt": None, "continuation": "y"}) == a
    assert affinity_key({"prompt": None}) is None


def test_one_conversation_under_several_kernels_lands_on_one_replica_and_another_on_the_other():
    pool = make_pool(2)

    async def scenario():
        arms = [DENSE, SPARSE, {"attention": "dense", "page_size": 32}]
        first = await asyncio.gather(*(pool.submit(chat("conversation A", k), samplings(4), timeout=5) for k in arms))
        second = await pool.submit(chat("conversation B"), samplings(4), timeout=5)
        return first, second

    first, second = run(pool, scenario)
    (a,) = {i for s in first for i in s.replicas}  # 12 sequences, one replica
    assert set(second.replicas) == {1 - a}, "a new conversation goes to the least busy replica"
    assert [r.busy for r in pool.replicas][a] == 12
    # Each request reached its replica as one admission of all its choices.
    adds = [m for m in pool.replicas[a].inbox.sent if isinstance(m, AddRequests)]
    assert len(adds) == 3 and all(len(m.payload["choices"]) == 4 for m in adds)
    impl = first[0].implementation
    assert impl == {**IMPL, "device": f"cpu:{a}", "replicas": [a] * 4}


def test_new_prompts_spread_over_idle_replicas_in_turn():
    pool = make_pool(3)

    async def scenario():
        out = []
        for name in "ABC":
            submission = await pool.submit(chat(name), samplings(1), timeout=5)
            out.append(submission.replicas[0])
            pool.replicas[submission.replicas[0]].sequences.clear()  # finished: all idle again
        return out

    assert run(pool, scenario) == [0, 1, 2]  # equal load: the replica given the least work


def test_affine_replica_over_the_threshold_spills_to_the_least_busy_one():
    pool = make_pool(2, affinity_threshold=4)

    async def scenario():
        # 5 sequences: the 5th sees the affine replica 4 busier (not over 4): all stay together.
        whole = await pool.submit(chat("A"), samplings(5), timeout=5)
        # Now 5 busier than the idle replica: the next choices of A go to the other one...
        spill = await pool.submit(chat("A", SPARSE), samplings(2), timeout=5)
        # ...which now holds A too: a third arm goes to the less busy of A's two replicas.
        third = await pool.submit(chat("A", {"attention": "dense", "page_size": 32}), samplings(1), timeout=5)
        return whole, spill, third

    whole, spill, third = run(pool, scenario)
    assert whole.replicas == [0] * 5
    assert spill.replicas == [1, 1]
    assert third.replicas == [1]
    assert pool._affinity[affinity_key(chat("A"))] == [1, 0]


def test_one_request_larger_than_the_threshold_is_split_in_two_runs_not_scattered():
    pool = make_pool(2, affinity_threshold=2)

    async def scenario():
        return await pool.submit(chat("A"), samplings(6), timeout=5)

    submission = run(pool, scenario)
    # 0,0,0 (then 3 > 2 over the idle replica), 1 takes A on, and the rest go to the less busy of the two.
    assert submission.replicas == [0, 0, 0, 1, 1, 1]
    impl = submission.implementation
    assert impl["replicas"] == submission.replicas and impl["device"] == "cpu:0"
    assert impl["by_replica"] == {"0": {**IMPL, "device": "cpu:0"}, "1": {**IMPL, "device": "cpu:1"}}


def test_relative_threshold_keeps_affinity_when_every_replica_is_loaded():
    pool = make_pool(2, affinity_threshold=4, affinity_ratio=1.5)
    key = affinity_key(chat("A"))
    pool._affinity[key] = [0]
    pool.replicas[0].jobs, pool.replicas[1].jobs = 20, 14  # 6 more (over 4) but not 1.5 times as many
    assert pool._choose(key).index == 0
    pool.replicas[1].jobs = 13  # 20 > 1.5 * 13: overloaded on both counts
    assert pool._choose(key).index == 1


def test_dead_affine_replica_is_skipped_and_forgotten():
    pool = make_pool(2)
    key = affinity_key(chat("A"))
    assert pool._choose(key).index == 0
    pool.replicas[0].state = "dead"
    assert pool._choose(key).index == 1
    assert pool._affinity[key] == [1]
    pool.replicas[1].state = "dead"
    with pytest.raises(APIError) as excinfo:
        pool._choose(key)
    assert excinfo.value.status == 503 and excinfo.value.code == "no_replica_available"


def test_affinity_table_is_a_bounded_lru():
    pool = make_pool(2, affinity_keys=3)
    keys = [affinity_key(chat(str(i))) for i in range(4)]
    for key in keys[:3]:
        pool._choose(key)
    pool._choose(keys[0])  # used again: now the most recent
    pool._choose(keys[3])
    assert list(pool._affinity) == [keys[2], keys[0], keys[3]]
    assert pool.health()["routing"]["affinity_keys"] == 3


def test_negative_threshold_turns_affinity_off():
    pool = make_pool(2, affinity_threshold=-1)

    async def scenario():
        return await pool.submit(chat("A"), samplings(2), timeout=5)

    assert run(pool, scenario).replicas == [0, 1]
    assert not pool._affinity


def test_divergence_prefers_the_conversations_replica():
    pool = make_pool(2)

    async def scenario():
        await pool.submit(chat("busy elsewhere"), samplings(3), timeout=5)  # replica 0 has 3 sequences
        conversation = await pool.submit(chat("A"), samplings(1), timeout=5)  # the least busy: replica 1
        payload = {"messages": chat("A")["messages"], "prompt": None, "continuation": "x"}
        on_conversation = await pool.divergence(payload, timeout=5)
        other = await pool.divergence({"messages": None, "prompt": "new", "continuation": "x"}, timeout=5)
        return conversation, on_conversation, other

    conversation, on_conversation, other = run(pool, scenario)
    assert conversation.replicas == [1]
    assert on_conversation == {"replica": 1}
    assert other == {"replica": 1}  # a prompt never seen: the least busy (1 sequence against 3)
    assert [r.jobs for r in pool.replicas] == [0, 0]


@pytest.mark.parametrize("options", [{"affinity_ratio": 0.5}, {"affinity_keys": 0}])
def test_bad_routing_options_are_refused(options):
    with pytest.raises(ValueError):
        ReplicaPool(["cpu"], **options)


def test_submission_implementation_of_one_replica_has_no_by_replica():
    submission = Submission(["a", "b"])
    replica = Replica(index=3, device="cpu", process=None, inbox=None, conn=None, state="ready")
    submission.replica_of = {"a": replica, "b": replica}
    submission.implementations = {3: IMPL}
    assert submission.implementation == {**IMPL, "replicas": [3, 3]}
