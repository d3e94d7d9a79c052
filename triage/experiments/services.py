"""Writes for experiments: start, run a chunk, record a sample, finalize, cancel, sweep.

Work is split into chunks: seed indices [start, stop) of one case, for every arm at once. A
chunk sends all arms' requests concurrently, so the bundled engine admits them in one step
and prefills the conversation once for every setting of a cache layout. Everything is
idempotent: a sample is unique on (arm, case, index) and is inserted with ON CONFLICT DO
NOTHING, a chunk only generates the samples that are missing, and finalization is claimed
by one worker with a conditional UPDATE. A chunk whose worker died (its heartbeat stops) is
re-dispatched by the sweep; an experiment never stays `running` once its chunks are gone.
"""

from __future__ import annotations

import logging
import math
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from triage import content_codec, selectors as transcript_selectors
from triage.backends import BackendClient, BackendError, Choice, Generation
from triage.experiments import analysis, arms as arm_planning, selectors
from triage.experiments.arms import ExperimentInputError
from triage.models import Arm, Backend, Experiment, ExperimentCase, ExperimentChunk, Flag, Sample, Transcript
from triage.services.flags import flags_advance
from triage.services.metrics import transcript_metrics

logger = logging.getLogger(__name__)

GREEDY_ONLY_MESSAGE = (
    "every arm is at temperature 0: greedy decoding degenerates by itself (it loops on its own), so a "
    "greedy-only experiment manufactures the symptom and hides kernel effects. Add an arm at the production "
    "temperature (0.6), or pass allow_greedy_only: true if you really want this."
)


# --- start -----------------------------------------------------------------------------


def _cases(*, transcript_ids: list | None, selection: dict | None) -> list[Transcript]:
    cap = settings.EXPERIMENT_MAX_CASES
    if transcript_ids:
        if not isinstance(transcript_ids, list):
            raise ExperimentInputError({"transcripts": "must be a list of transcript ids"})
        bad = [i for i, t in enumerate(transcript_ids) if isinstance(t, bool) or not isinstance(t, int)]
        if bad:
            raise ExperimentInputError({f"transcripts[{bad[0]}]": "must be an integer transcript id"})
        ids = list(dict.fromkeys(transcript_ids))
        if len(ids) > cap:
            raise ExperimentInputError({"transcripts": f"{len(ids)} transcripts is over the suite cap of {cap} "
                                                       f"(EXPERIMENT_MAX_CASES)"})
        found = {t.pk: t for t in Transcript.objects.select_related("kernel_profile").filter(pk__in=ids)}
        missing = [(i, t) for i, t in enumerate(transcript_ids) if t not in found]
        if missing:
            i, t = missing[0]
            raise ExperimentInputError({f"transcripts[{i}]": f"unknown transcript id {t}"})
        return [found[i] for i in ids]
    if selection:
        rows = list(transcript_selectors.transcript_list(filters=selection).select_related("kernel_profile")[:cap])
        if not rows:
            raise ExperimentInputError({"selection": "matches no transcript; widen the filters"})
        return rows
    raise ExperimentInputError({"transcripts": "give the transcript ids to regenerate (or a selection)"})


def case_max_tokens(transcript: Transcript) -> int:
    """The original request's limit, else 1.5 × the original response's length, capped."""
    cap = settings.EXPERIMENT_MAX_TOKENS_CAP
    limit = (transcript.sampling or {}).get("max_tokens")
    if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
        return min(limit, cap)
    length = (transcript.usage or {}).get("completion_tokens")
    if not isinstance(length, int) or isinstance(length, bool) or length <= 0:
        length = max(1, len(transcript.response) // 4)  # ~4 characters a token
    return max(1, min(math.ceil(length * 1.5), cap))


NAME_REQUEST_ID_MAX = 80  # (request ids are up to 200 characters; the name is a title)


def default_name(*, cases: list[Transcript], arm_count: int) -> str:
    """The name when none is given: "demo-0043 × 3 arms" for one transcript (its request_id says
    which one, where a count would not), "3 transcripts × 1 arm" for a suite."""
    arms = f"{arm_count} arm{'' if arm_count == 1 else 's'}"
    if len(cases) == 1:
        request_id = cases[0].request_id
        if len(request_id) > NAME_REQUEST_ID_MAX:
            request_id = request_id[:NAME_REQUEST_ID_MAX - 1] + "…"
        return f"{request_id or f'transcript {cases[0].pk}'} × {arms}"
    return f"{len(cases)} transcripts × {arms}"


def _chunk_size(plans: list[arm_planning.ArmPlan], samples: int) -> int:
    configured = settings.EXPERIMENT_CHUNK_SIZE
    if configured:
        return max(1, min(samples, configured))
    per_backend: dict[int, list] = {}
    for plan in plans:
        per_backend.setdefault(plan.backend.pk, []).append(plan)
    size = samples
    for group in per_backend.values():
        size = min(size, max(1, group[0].backend.max_concurrency // len(group)))
    return max(1, size)


@transaction.atomic
def experiment_start(*, transcripts: list | None = None, selection: dict | None = None, arms: list | None = None,
                     samples: int | None = None, max_tokens: int | None = None, ablate: bool = False,
                     allow_greedy_only: bool = False, base_seed: int | None = None, name: str = "",
                     user=None, via: str = "", dispatch: bool = True) -> Experiment:
    """Plan and create an experiment; its chunks are dispatched when the transaction commits.
    Raises ExperimentInputError (field → message) on bad input."""
    samples = settings.EXPERIMENT_DEFAULT_SAMPLES if samples is None else samples
    if isinstance(samples, bool) or not isinstance(samples, int) or not 1 <= samples <= settings.EXPERIMENT_MAX_SAMPLES:
        raise ExperimentInputError({"samples": f"must be an integer between 1 and {settings.EXPERIMENT_MAX_SAMPLES} "
                                               f"(EXPERIMENT_MAX_SAMPLES), got {samples!r}"})
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)
                                   or not 1 <= max_tokens <= settings.EXPERIMENT_MAX_TOKENS_CAP):
        raise ExperimentInputError({"max_tokens": f"must be an integer between 1 and {settings.EXPERIMENT_MAX_TOKENS_CAP} "
                                                  f"(EXPERIMENT_MAX_TOKENS_CAP), got {max_tokens!r}"})
    base_seed = settings.EXPERIMENT_BASE_SEED if base_seed is None else base_seed
    if isinstance(base_seed, bool) or not isinstance(base_seed, int) or not 0 <= base_seed < 2**62:
        raise ExperimentInputError({"base_seed": f"must be a non-negative integer, got {base_seed!r}"})
    cases = _cases(transcript_ids=transcripts, selection=selection)
    fallback = arm_planning.default_backend()
    plans = (arm_planning.explicit_arms(arms, fallback=fallback) if arms
             else arm_planning.default_arms(cases, fallback=fallback))
    if ablate:
        plans = arm_planning.ablation_arms(plans)
    if all(t <= arm_planning.GREEDY_MAX_TEMPERATURE for t in arm_planning.temperatures(
            [p for p in plans if not p.extra.get("added")])) and not allow_greedy_only:
        raise ExperimentInputError({"arms": GREEDY_ONLY_MESSAGE})
    if max_tokens is not None:
        for plan in plans:
            plan.sampling.setdefault("max_tokens", max_tokens)
    experiment = Experiment.objects.create(
        name=name or default_name(cases=cases, arm_count=len(plans)),
        created_by=user if getattr(user, "pk", None) else None, created_via=via, samples_per_arm=samples,
        base_seed=base_seed, chunk_size=_chunk_size(plans, samples), ablate=ablate,
        allow_greedy_only=allow_greedy_only, selection=selection or {},
    )
    arm_planning.create_arms(experiment, plans)
    case_rows = ExperimentCase.objects.bulk_create([
        ExperimentCase(experiment=experiment, transcript=t, position=i, max_tokens=max_tokens or case_max_tokens(t))
        for i, t in enumerate(cases)])
    chunks = ExperimentChunk.objects.bulk_create([
        ExperimentChunk(experiment=experiment, case=case, start=start, stop=min(start + experiment.chunk_size, samples))
        for case in case_rows for start in range(0, samples, experiment.chunk_size)])
    ids = [c.pk for c in chunks]
    flags_advance(transcript_ids=[t.pk for t in cases], to=Flag.Status.INVESTIGATING)
    if dispatch:  # False: the caller runs the chunks itself (run_experiment --inline)
        transaction.on_commit(lambda: dispatch_chunks(ids))
    return experiment


def dispatch_chunks(chunk_ids: list[int]) -> None:
    from triage.tasks import experiment_chunk

    now = timezone.now()
    for chunk_id in chunk_ids:
        ExperimentChunk.objects.filter(pk=chunk_id).update(dispatched_at=now)
        try:
            result = experiment_chunk.apply_async(args=[chunk_id])
        except Exception as exc:  # noqa: BLE001 - broker down: the sweep dispatches it again later
            logger.error("could not dispatch chunk %s (the sweep will retry): %s", chunk_id, exc)
            continue
        ExperimentChunk.objects.filter(pk=chunk_id, task_id="").update(task_id=result.id or "")


def dispatch_finalize(experiment_id: int) -> None:
    from triage.tasks import experiment_finalize

    def send() -> None:
        try:
            experiment_finalize.apply_async(args=[experiment_id])
        except Exception as exc:  # noqa: BLE001 - broker down: the sweep finalizes it later
            logger.error("could not dispatch finalization of experiment %s: %s", experiment_id, exc)

    transaction.on_commit(send)


# --- cancel ----------------------------------------------------------------------------


def experiment_cancel(*, experiment: Experiment) -> Experiment:
    """Stop it: pending chunks are revoked, a running chunk stops at its next heartbeat (within
    one chunk). The samples done so far are kept and summarised. Cancelling a finished
    experiment changes nothing."""
    with transaction.atomic():
        experiment = Experiment.objects.select_for_update().get(pk=experiment.pk)
        if experiment.is_final or experiment.status == Experiment.Status.FINALIZING:
            return experiment  # every sample is in: it ends in a moment with its verdict
        experiment.status = Experiment.Status.CANCELLED
        experiment.finished_at = timezone.now()
        experiment.save(update_fields=["status", "finished_at"])
        open_chunks = ExperimentChunk.objects.filter(experiment=experiment).exclude(status__in=ExperimentChunk.TERMINAL)
        task_ids = [t for t in open_chunks.values_list("task_id", flat=True) if t]
        open_chunks.update(status=ExperimentChunk.Status.CANCELLED)
    if task_ids:
        try:
            from triage.celery_app import app

            app.control.revoke(task_ids)
        except Exception as exc:  # noqa: BLE001 - a broker without remote control: chunks still check the status
            logger.warning("could not revoke %d tasks of experiment %s: %s", len(task_ids), experiment.pk, exc)
    analysis.summarize(experiment)
    experiment.refresh_from_db()
    return experiment


# --- samples ---------------------------------------------------------------------------


def _sample_row(*, arm: Arm, case: ExperimentCase, index: int, choice: Choice, messages: list) -> Sample:
    verdict = transcript_metrics(text=choice.text, finish_reason=choice.finish_reason, messages=messages,
                                 logprobs=choice.logprobs,
                                 chat_template=(arm.backend.chat_template or None) if arm.backend_id else None)
    row = {"text": choice.text, "logprobs": choice.logprobs, "metrics": verdict["metrics"], "reasons": verdict["reasons"]}
    encoding = ""
    if "\x00" in choice.text or any("\x00" in (e.get("token") or "") for e in choice.logprobs or []):
        encoding = content_codec.NUL_ESCAPED
        row = {key: content_codec.escape(value) for key, value in row.items()}
    return Sample(arm=arm, case=case, index=index, seed=choice.seed if choice.seed is not None else 0,
                  finish_reason=choice.finish_reason, completion_tokens=choice.completion_tokens,
                  token_ids=choice.token_ids, degenerate=verdict["degenerate"], severity=verdict["severity"],
                  latency_ms=choice.latency_ms, content_encoding=encoding, **row)


def sample_record(*, arm: Arm, case: ExperimentCase, choices: list[tuple[int, Choice]], messages: list) -> int:
    """Store samples (index, choice) of an arm on a case, with their metrics. Idempotent: a
    sample that exists already is left as it is. Returns how many were new."""
    rows = [_sample_row(arm=arm, case=case, index=index, choice=choice, messages=messages) for index, choice in choices]
    before = Sample.objects.filter(arm=arm, case=case, index__in=[r.index for r in rows]).count()
    Sample.objects.bulk_create(rows, ignore_conflicts=True)
    return len(rows) - before


# --- chunks ----------------------------------------------------------------------------


def _runs(indices: list[int]) -> list[tuple[int, int]]:
    """Contiguous runs of sorted indices as (start, length)."""
    runs: list[tuple[int, int]] = []
    for i in indices:
        if runs and runs[-1][0] + runs[-1][1] == i:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((i, 1))
    return runs


def _runtime(arm: Arm, client: BackendClient, generation: Generation) -> dict:
    return {
        "backend": {"name": client.name, "kind": client.kind, "base_url": client.base_url},
        "model": generation.model or client.model,
        "dtype": (generation.implementation or {}).get("dtype"),
        "kernel": generation.kernel if generation.kernel is not None else arm.kernel,
        "kernel_sent": client.bundled,
        "implementation": generation.implementation,
        "mode": generation.mode,
        "capabilities": client.capabilities,
        **({"planned": arm.runtime["planned"]} if arm.runtime.get("planned") else {}),
    }


def _heartbeat(chunk: ExperimentChunk) -> bool:
    """Refresh the chunk's heartbeat; False when the experiment was cancelled meanwhile."""
    now = timezone.now()
    ExperimentChunk.objects.filter(pk=chunk.pk).update(heartbeat_at=now)
    Experiment.objects.filter(pk=chunk.experiment_id).update(heartbeat_at=now)
    return not Experiment.objects.filter(pk=chunk.experiment_id, status=Experiment.Status.CANCELLED).exists()


def chunk_run(*, chunk_id: int, finalize: bool = True) -> str:
    """Generate the missing samples of one chunk for every arm at once; returns the chunk's
    final status. Any failure ends the chunk `failed` with the error (never left running)."""
    try:
        return _chunk_run(chunk_id=chunk_id, finalize=finalize)
    except Exception as exc:
        logger.exception("chunk %s failed", chunk_id)
        ExperimentChunk.objects.filter(pk=chunk_id).exclude(status__in=ExperimentChunk.TERMINAL).update(
            status=ExperimentChunk.Status.FAILED, error=f"{exc.__class__.__name__}: {exc}"[:4000])
        experiment_id = ExperimentChunk.objects.filter(pk=chunk_id).values_list("experiment_id", flat=True).first()
        if finalize and experiment_id:
            experiment_maybe_finalize(experiment_id=experiment_id)
        raise


def _chunk_run(*, chunk_id: int, finalize: bool = True) -> str:
    """Generate the missing samples of one chunk for every arm at once; returns the chunk's
    final status. Backend failures (after the client's retries) fail the chunk with the
    backend's error; the experiment is finalized when its last chunk ends."""
    chunk = ExperimentChunk.objects.select_related("experiment", "case__transcript").filter(pk=chunk_id).first()
    if chunk is None:
        return "missing"
    experiment = chunk.experiment
    if experiment.status in Experiment.FINAL or experiment.status == Experiment.Status.FINALIZING:
        if chunk.status not in ExperimentChunk.TERMINAL:
            ExperimentChunk.objects.filter(pk=chunk.pk).update(status=ExperimentChunk.Status.CANCELLED)
        return "skipped"
    if chunk.status in (ExperimentChunk.Status.DONE, ExperimentChunk.Status.CANCELLED):
        return chunk.status
    now = timezone.now()
    ExperimentChunk.objects.filter(pk=chunk.pk).update(status=ExperimentChunk.Status.RUNNING, heartbeat_at=now,
                                                       attempts=chunk.attempts + 1, error="")
    Experiment.objects.filter(pk=experiment.pk, status=Experiment.Status.PENDING).update(
        status=Experiment.Status.RUNNING, started_at=now)
    case = chunk.case
    messages = selectors.conversation(case=case)
    arms = list(Arm.objects.select_related("backend").filter(experiment=experiment))
    have = set(Sample.objects.filter(case=case, index__gte=chunk.start, index__lt=chunk.stop)
               .values_list("arm_id", "index"))
    clients: dict[int, BackendClient] = {}
    jobs = []
    errors: dict[int, str] = {}
    for arm in arms:
        if arm.backend is None:
            errors[arm.pk] = f"arm '{arm.name}' has no backend (it was deleted); bind its profile to one"
            continue
        if arm.backend_id not in clients:
            clients[arm.backend_id] = BackendClient.for_backend(arm.backend, attempts=settings.BACKEND_ATTEMPTS,
                                                                backoff=settings.BACKEND_BACKOFF,
                                                                timeout=settings.BACKEND_TIMEOUT)
        missing = [i for i in range(chunk.start, chunk.stop) if (arm.pk, i) not in have]
        sampling = {"max_tokens": case.max_tokens, **arm.sampling}
        for start, length in _runs(missing):
            jobs.append((arm, start, length, sampling))
    cancelled = False
    if jobs:
        pool = ThreadPoolExecutor(max_workers=len(jobs), thread_name_prefix=f"chunk-{chunk.pk}")
        futures = {pool.submit(clients[arm.backend_id].generate, messages=messages, n=length,
                               seed=experiment.base_seed + start, sampling=sampling, kernel=arm.kernel): (arm, start)
                   for arm, start, length, sampling in jobs}
        pending = set(futures)
        try:
            while pending:
                done, pending = wait(pending, timeout=settings.EXPERIMENT_HEARTBEAT_SECONDS, return_when=FIRST_COMPLETED)
                for future in done:
                    arm, start = futures[future]
                    try:
                        generation = future.result()
                    except BackendError as exc:
                        errors[arm.pk] = str(exc)
                        continue
                    except Exception as exc:  # noqa: BLE001 - a client bug must fail the arm, not hang the chunk
                        logger.exception("chunk %s arm %s failed", chunk.pk, arm.name)
                        errors[arm.pk] = f"{exc.__class__.__name__}: {exc}"
                        continue
                    sample_record(arm=arm, case=case, messages=messages,
                                  choices=[(start + i, c) for i, c in enumerate(generation.choices)])
                    client = clients[arm.backend_id]
                    Arm.objects.filter(pk=arm.pk).update(runtime=_runtime(arm, client, generation))
                    if not client.bundled and client.capabilities:
                        Backend.objects.filter(pk=arm.backend_id).update(capabilities=client.capabilities)
                if not _heartbeat(chunk):
                    cancelled = True
                    break
        finally:
            pool.shutdown(wait=not cancelled, cancel_futures=True)
            for client in clients.values():
                if not cancelled:
                    client.close()
    if cancelled:
        ExperimentChunk.objects.filter(pk=chunk.pk).update(status=ExperimentChunk.Status.CANCELLED)
        return "cancelled"
    for arm_id, message in errors.items():
        Arm.objects.filter(pk=arm_id).update(error=message[:2000])
    status = ExperimentChunk.Status.FAILED if errors else ExperimentChunk.Status.DONE
    ExperimentChunk.objects.filter(pk=chunk.pk).update(status=status, heartbeat_at=timezone.now(),
                                                       error="; ".join(errors.values())[:4000])
    if finalize:
        experiment_maybe_finalize(experiment_id=experiment.pk)
    return status


def experiment_maybe_finalize(*, experiment_id: int) -> bool:
    """Dispatch finalization once every chunk has ended (done, failed or cancelled)."""
    open_chunks = ExperimentChunk.objects.filter(experiment_id=experiment_id).exclude(status__in=ExperimentChunk.TERMINAL)
    if open_chunks.exists():
        return False
    if not Experiment.objects.filter(pk=experiment_id, status__in=[Experiment.Status.PENDING, Experiment.Status.RUNNING]).exists():
        return False
    dispatch_finalize(experiment_id)
    return True


def experiment_run_inline(*, experiment: Experiment, on_chunk=None) -> Experiment:
    """Run every chunk and the finalization in this process (no worker): for the command's
    --inline and for benchmarks. Chunks already done are skipped, as by a worker."""
    for chunk in ExperimentChunk.objects.filter(experiment=experiment).order_by("case__position", "start"):
        chunk_run(chunk_id=chunk.pk, finalize=False)
        if on_chunk:
            on_chunk(chunk)
    experiment_finalize(experiment_id=experiment.pk)
    experiment.refresh_from_db()
    return experiment


# --- finalize --------------------------------------------------------------------------


def experiment_finalize(*, experiment_id: int) -> str | None:
    """Statistics, divergence, diagnosis; then done / partial / failed. Claimed with a
    conditional UPDATE, so concurrent calls finalize once. Returns the status, or None when
    another call owns (or finished) it."""
    claimed = Experiment.objects.filter(
        Q(status__in=[Experiment.Status.PENDING, Experiment.Status.RUNNING]) | Q(status=Experiment.Status.FINALIZING,
                                                                                heartbeat_at__lt=_finalize_stale_before()),
        pk=experiment_id).update(status=Experiment.Status.FINALIZING, heartbeat_at=timezone.now())
    if not claimed:
        return None
    experiment = Experiment.objects.get(pk=experiment_id)
    try:
        analysis.finalize(experiment)
    except Exception as exc:  # noqa: BLE001 - never leave it finalizing: record why and end it
        logger.exception("finalizing experiment %s failed", experiment_id)
        Experiment.objects.filter(pk=experiment_id, status=Experiment.Status.FINALIZING).update(
            status=Experiment.Status.FAILED, finished_at=timezone.now(),
            error=f"analysis failed: {exc.__class__.__name__}: {exc}")
        return Experiment.Status.FAILED
    status, verdict = Experiment.objects.filter(pk=experiment_id).values_list("status", "verdict").first()
    if status == Experiment.Status.DONE and verdict in DECISIVE_VERDICTS:
        flags_advance(transcript_ids=list(experiment.cases.values_list("transcript_id", flat=True)),
                      to=Flag.Status.DIAGNOSED)
    return status


DECISIVE_VERDICTS = ("kernel", "sampling", "model_or_prompt")


# --- sweep -----------------------------------------------------------------------------


def _stale_before():
    return timezone.now() - timedelta(seconds=settings.EXPERIMENT_STALE_SECONDS)


def _finalize_stale_before():
    """Finalization makes long backend calls (teacher forcing) between heartbeats."""
    return timezone.now() - timedelta(seconds=settings.EXPERIMENT_FINALIZE_STALE_SECONDS)


def experiment_sweep() -> dict[str, Any]:
    """Periodic: re-dispatch chunks whose worker is gone (no heartbeat for
    EXPERIMENT_STALE_SECONDS, or dispatched and never started for
    EXPERIMENT_PENDING_STALE_SECONDS), fail those that died too often, and finalize
    experiments whose chunks have all ended. Returns what it did."""
    stale = _stale_before()
    pending_stale = timezone.now() - timedelta(seconds=settings.EXPERIMENT_PENDING_STALE_SECONDS)
    lost = ExperimentChunk.objects.filter(
        Q(status=ExperimentChunk.Status.RUNNING, heartbeat_at__lt=stale)
        | Q(status=ExperimentChunk.Status.PENDING, dispatched_at__lt=pending_stale)
        | Q(status=ExperimentChunk.Status.PENDING, dispatched_at__isnull=True, experiment__created_at__lt=pending_stale),
        experiment__status__in=[Experiment.Status.PENDING, Experiment.Status.RUNNING])
    redispatch, failed = [], []
    for chunk in lost:
        if chunk.attempts >= settings.EXPERIMENT_MAX_CHUNK_ATTEMPTS:
            ExperimentChunk.objects.filter(pk=chunk.pk, status=chunk.status).update(
                status=ExperimentChunk.Status.FAILED,
                error=f"its worker was lost {chunk.attempts} times (no heartbeat for "
                      f"{settings.EXPERIMENT_STALE_SECONDS}s); check the worker logs")
            failed.append(chunk.pk)
        else:
            if ExperimentChunk.objects.filter(pk=chunk.pk, status=chunk.status, heartbeat_at=chunk.heartbeat_at).update(
                    status=ExperimentChunk.Status.PENDING, task_id=""):
                redispatch.append(chunk.pk)
    if redispatch:
        dispatch_chunks(redispatch)
    finalized = []
    open_experiments = Experiment.objects.filter(
        Q(status__in=[Experiment.Status.PENDING, Experiment.Status.RUNNING])
        | Q(status=Experiment.Status.FINALIZING, heartbeat_at__lt=_finalize_stale_before()))
    for experiment_id in open_experiments.values_list("pk", flat=True):
        if not ExperimentChunk.objects.filter(experiment_id=experiment_id).exclude(status__in=ExperimentChunk.TERMINAL).exists():
            from triage.tasks import experiment_finalize as finalize_task

            finalize_task.apply_async(args=[experiment_id])
            finalized.append(experiment_id)
    return {"redispatched": redispatch, "failed": failed, "finalizing": finalized}
