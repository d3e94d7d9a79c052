"""Planning an experiment's arms: the defaults, explicit arms, and ablation.

An arm is a kernel setting (a profile, optionally with overrides) bound to a backend, with
sampling parameters. Defaults (docs/architecture.md, step 3): `stock` at the production temperature; the
profile that served the transcript at the same sampling; and, only when the transcript was
served at T≈0, a `greedy-control` arm at T=0 with the served kernels, which reproduces the
pathology. Ablation adds one arm per kernel component in which a candidate differs from
stock: stock with only that component switched to the candidate's value, so the diagnosis
can name the component at fault.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from django.conf import settings

from kernels.settings import KernelSettings, KernelSettingsError
from triage.models import Arm, Backend, KernelProfile, Transcript

GREEDY_MAX_TEMPERATURE = 0.05  # "served at T=0": greedy, or so close to it that it behaves the same
SAMPLING_KEYS = ("temperature", "top_p", "top_k", "min_p", "max_tokens")
# Settings that only mean something under sparse attention: ablating one of them switches it
# on stock's sparse counterpart (stock's other settings kept), not on dense stock where it
# would change nothing.
SPARSE_ONLY = ("decode_kernel", "indexer", "sparse_budget", "sink_pages", "local_pages")
COMPONENT_ORDER = ("attention", "decode_kernel", "indexer", "kv_cache_dtype", "page_size", "sparse_budget",
                   "sink_pages", "local_pages")


class ExperimentInputError(ValueError):
    """Bad experiment input; `errors` maps a field path to what was wrong (the API's 400)."""

    def __init__(self, errors: dict[str, str]):
        self.errors = errors
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))


@dataclass
class ArmPlan:
    name: str
    role: str
    kernel: dict
    sampling: dict
    profile: KernelProfile | None
    backend: Backend
    component: str = ""
    extra: dict = field(default_factory=dict)

    def key(self) -> tuple:
        return (self.backend.pk, tuple(sorted(self.kernel.items())), tuple(sorted(self.sampling.items())))


def production_sampling() -> dict:
    return {"temperature": float(settings.EXPERIMENT_PRODUCTION_TEMPERATURE),
            "top_p": float(settings.EXPERIMENT_PRODUCTION_TOP_P)}


def default_backend() -> Backend:
    backend = Backend.objects.filter(kind=Backend.Kind.BUNDLED).order_by("id").first() or Backend.objects.order_by("id").first()
    if backend is None:
        raise ExperimentInputError({"arms": "no backend is configured; run 'python manage.py bootstrap' or add one "
                                            "in the admin (Backends)"})
    return backend


def stock_profile() -> KernelProfile:
    name = settings.EXPERIMENT_STOCK_PROFILE
    profile = KernelProfile.objects.select_related("backend").filter(name=name).first()
    if profile is None:
        raise ExperimentInputError({"arms": f"the stock profile '{name}' does not exist; run 'python manage.py "
                                            f"bootstrap' or set EXPERIMENT_STOCK_PROFILE"})
    return profile


def _full(kernel: dict | KernelSettings | None, path: str) -> dict:
    try:
        return KernelSettings.from_dict(kernel, path=path).to_dict()
    except KernelSettingsError as exc:
        raise ExperimentInputError(exc.errors) from None


def served_profile(transcript: Transcript) -> tuple[str, dict, KernelProfile | None]:
    """(name, full kernel settings, profile) of what served the transcript: its profile, else the
    profile whose settings equal its kernel settings, else an unnamed `served` setting."""
    if transcript.kernel_profile_id:
        profile = transcript.kernel_profile
        return profile.name, _full(profile.settings, "kernel_profile"), profile
    try:
        kernel = KernelSettings.from_dict(transcript.kernel or {}).to_dict()
    except KernelSettingsError:
        kernel = KernelSettings().to_dict()
    for profile in KernelProfile.objects.select_related("backend").order_by("id"):
        try:
            if KernelSettings.from_dict(profile.settings).to_dict() == kernel:
                return profile.name, kernel, profile
        except KernelSettingsError:
            continue
    return "served", kernel, None


def _backend_of(profile: KernelProfile | None, fallback: Backend) -> Backend:
    return profile.backend if profile is not None and profile.backend_id else fallback


def _sampling(raw: dict, path: str, base: dict) -> dict:
    errors: dict[str, str] = {}
    out = dict(base)
    for key in SAMPLING_KEYS:
        if key not in raw or raw[key] is None:
            continue
        value = raw[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            errors[f"{path}.{key}"] = f"must be a number, got {type(value).__name__}"
            continue
        if key == "temperature" and not 0 <= value <= 2:
            errors[f"{path}.{key}"] = f"must be between 0 and 2, got {value}"
        elif key == "top_p" and not 0 < value <= 1:
            errors[f"{path}.{key}"] = f"must be in (0, 1], got {value}"
        elif key == "min_p" and not 0 <= value <= 1:
            errors[f"{path}.{key}"] = f"must be between 0 and 1, got {value}"
        elif key in ("top_k", "max_tokens") and (int(value) != value or value < (1 if key == "max_tokens" else 0)):
            errors[f"{path}.{key}"] = f"must be an integer ≥ {1 if key == 'max_tokens' else 0}, got {value}"
        elif key == "max_tokens" and value > settings.EXPERIMENT_MAX_TOKENS_CAP:
            errors[f"{path}.{key}"] = f"must be at most {settings.EXPERIMENT_MAX_TOKENS_CAP} (EXPERIMENT_MAX_TOKENS_CAP), got {value}"
        else:
            out[key] = int(value) if key in ("top_k", "max_tokens") else float(value)
    if errors:
        raise ExperimentInputError(errors)
    return out


def explicit_arms(raw_arms: list, *, fallback: Backend) -> list[ArmPlan]:
    """Arms as the user gave them: [{"name", "profile", "kernel" (overrides), "backend" (name;
    default: the profile's), "temperature", "top_p", "top_k", "min_p", "max_tokens"}]. Unknown
    keys, profiles and backends are errors."""
    if not isinstance(raw_arms, list) or not raw_arms:
        raise ExperimentInputError({"arms": "must be a non-empty list of arms"})
    allowed = {"name", "profile", "kernel", "backend", *SAMPLING_KEYS}
    profiles = {p.name: p for p in KernelProfile.objects.select_related("backend")}
    backends = {b.name: b for b in Backend.objects.all()}
    stock_name = settings.EXPERIMENT_STOCK_PROFILE
    plans, errors = [], {}
    for i, raw in enumerate(raw_arms):
        path = f"arms[{i}]"
        if not isinstance(raw, dict):
            errors[path] = f"must be an object, got {type(raw).__name__}"
            continue
        unknown = sorted(set(raw) - allowed)
        if unknown:
            errors[f"{path}.{unknown[0]}"] = f"unknown field; allowed: {', '.join(sorted(allowed))}"
            continue
        name = raw.get("profile")
        profile = None
        if name is not None and not isinstance(name, str):
            errors[f"{path}.profile"] = f"must be a profile name (a string), got {type(name).__name__}"
            continue
        if name is not None:
            profile = profiles.get(name)
            if profile is None:
                errors[f"{path}.profile"] = f"unknown kernel profile '{name}'; known: {', '.join(sorted(profiles)) or 'none'}"
                continue
        backend = _backend_of(profile, fallback)
        if raw.get("backend") is not None:
            backend = backends.get(raw["backend"]) if isinstance(raw["backend"], str) else None
            if backend is None:
                errors[f"{path}.backend"] = (f"unknown backend {raw['backend']!r}; known: "
                                             f"{', '.join(sorted(backends)) or 'none'}")
                continue
        overrides = raw.get("kernel") or {}
        if not isinstance(overrides, dict):
            errors[f"{path}.kernel"] = "must be an object of kernel settings"
            continue
        try:
            kernel = _full({**(profile.settings if profile else {}), **overrides}, f"{path}.kernel")
            sampling = _sampling(raw, path, production_sampling())
        except ExperimentInputError as exc:
            errors.update(exc.errors)
            continue
        is_stock = profile is not None and profile.name == stock_name and not overrides
        role = "control" if sampling["temperature"] <= GREEDY_MAX_TEMPERATURE else ("stock" if is_stock else "candidate")
        default_label = (name if not overrides else None) or KernelSettings.from_dict(kernel).label
        if role == "control":
            default_label = "greedy-control" if is_stock else f"greedy-control ({default_label})"
        label = raw.get("name") or default_label
        if not isinstance(label, str) or not label.strip() or len(label) > 100:
            errors[f"{path}.name"] = "must be a non-empty string of at most 100 characters"
            continue
        plans.append(ArmPlan(label, role, kernel, sampling, profile, backend))
    if errors:
        raise ExperimentInputError(errors)
    names = [p.name for p in plans]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate:
        raise ExperimentInputError({"arms": f"two arms are named '{duplicate}'; give each a distinct name"})
    # One reference: the first stock arm at the production temperature (others compare to it).
    stocks = [p for p in plans if p.role == "stock"]
    for extra in stocks[1:]:
        extra.role = "candidate"
    if not stocks:
        stock = stock_profile()
        plans.insert(0, ArmPlan("stock", "stock", _full(stock.settings, "stock"), production_sampling(), stock,
                                _backend_of(stock, fallback), extra={"added": "a stock reference arm was added: every "
                                                                              "comparison is against stock"}))
        if "stock" in names:
            raise ExperimentInputError({"arms": "an arm is named 'stock' but is not the stock profile at a sampling "
                                                "temperature; rename it"})
    return plans


def default_arms(transcripts: list[Transcript], *, fallback: Backend) -> list[ArmPlan]:
    stock = stock_profile()
    stock_kernel = _full(stock.settings, "stock")
    plans = [ArmPlan("stock", "stock", stock_kernel, production_sampling(), stock, _backend_of(stock, fallback))]
    seen = {stock_kernel_key := tuple(sorted(stock_kernel.items()))}
    greedy_served: list[tuple[str, dict, KernelProfile | None]] = []
    for transcript in transcripts:
        name, kernel, profile = served_profile(transcript)
        key = tuple(sorted(kernel.items()))
        greedy = transcript.temperature is not None and transcript.temperature <= GREEDY_MAX_TEMPERATURE
        if greedy and (name, kernel) not in [(n, k) for n, k, _ in greedy_served]:
            greedy_served.append((name, kernel, profile))
        if key in seen:
            continue
        seen.add(key)
        arm_name = name if name != "stock" else "served"
        plans.append(ArmPlan(arm_name, "candidate", kernel, production_sampling(), profile, _backend_of(profile, fallback)))
    for name, kernel, profile in greedy_served[:1]:  # one control: what served the (first) greedy transcript
        control_name = "greedy-control" if tuple(sorted(kernel.items())) == stock_kernel_key else f"greedy-control ({name})"
        plans.append(ArmPlan(control_name, "control", kernel, {"temperature": 0.0, "top_p": 1.0}, profile,
                             _backend_of(profile, fallback)))
    return plans


def ablation_arms(plans: list[ArmPlan]) -> list[ArmPlan]:
    """One arm per component in which a candidate differs from stock: stock with only that
    component switched. Arms equal to an existing arm are not repeated: the existing one is
    marked with the component instead."""
    stock = next(p for p in plans if p.role == "stock")
    added: list[ArmPlan] = []
    for candidate in [p for p in plans if p.role == "candidate"]:
        differing = [c for c in COMPONENT_ORDER if candidate.kernel[c] != stock.kernel[c]]
        if len(differing) == 1 and differing[0] not in SPARSE_ONLY:
            candidate.component = candidate.component or differing[0]
            continue  # one component: the candidate is its own ablation
        for component in differing:
            if component == "attention" or component not in SPARSE_ONLY:
                base = dict(stock.kernel)
            else:
                base = {**stock.kernel, "attention": "sparse"}
            kernel = {**base, component: candidate.kernel[component]}
            try:
                kernel = KernelSettings.from_dict(kernel).to_dict()
            except KernelSettingsError:
                continue  # e.g. a budget too small for stock's page counts: not a valid single switch
            if kernel == stock.kernel:
                continue
            plan = ArmPlan(f"ablate {component}={candidate.kernel[component]}", "ablation", kernel, dict(candidate.sampling),
                           stock.profile, stock.backend, component=component)
            twin = next((p for p in plans + added if p.key() == plan.key()), None)
            if twin is not None:
                if twin.role in ("candidate", "ablation") and not twin.component:
                    twin.component = component
                continue
            added.append(plan)
    return plans + added


def unique_names(plans: list[ArmPlan]) -> list[ArmPlan]:
    """Arm names are unique per experiment: a repeated generated name gets a number."""
    seen: dict[str, int] = {}
    for plan in plans:
        if plan.name in seen:
            seen[plan.name] += 1
            plan.name = f"{plan.name} #{seen[plan.name]}"[:100]
        else:
            seen[plan.name] = 1
    return plans


def create_arms(experiment, plans: list[ArmPlan]) -> list[Arm]:
    plans = unique_names(plans)
    arms = [Arm(experiment=experiment, name=p.name, role=p.role, component=p.component, kernel_profile=p.profile,
                backend=p.backend, kernel=p.kernel, sampling=p.sampling, position=i, runtime={"planned": p.extra} if p.extra else {})
            for i, p in enumerate(plans)]
    return Arm.objects.bulk_create(arms)


def temperatures(plans: list[ArmPlan]) -> list[float]:
    return [p.sampling["temperature"] for p in plans]
