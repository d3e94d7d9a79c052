"""The triage queue (/transcripts/): filters, cursor pages, and bulk actions on the selected
rows — flag (ops, engineers), start an experiment suite (engineers), export (everyone).
Reads go through selectors, writes through services; views parse, check roles and answer."""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views import View
from django.views.decorators.http import require_POST

from triage import export, selectors
from triage.degeneration import REASON_CODES
from triage.experiments import services as experiment_services
from triage.experiments.arms import ExperimentInputError
from triage.models import Flag
from triage.roles import can_experiment, can_flag
from triage.services import flags

PAGE_SIZE = 50
BULK_MAX = 500  # ids in one bulk request (a page holds PAGE_SIZE)
RANGE_PRESETS = {"24h": timedelta(hours=24), "7d": timedelta(days=7), "30d": timedelta(days=30)}
# The detector's reason codes (triage/degeneration/findings.py), offered as suggestions; any code filters.
KNOWN_REASONS = REASON_CODES
USER_FLAG_REASONS = [c for c in Flag.Reason.choices if c[0] != Flag.Reason.AUTO]


class _TriState(forms.NullBooleanField):
    """A checkbox filter: '1'/'on'/'true' → True, '0'/'false' → False, absent → no filter."""

    widget = forms.TextInput  # (NullBooleanSelect reads '1' as "unknown")

    def to_python(self, value):
        return True if value == "on" else super().to_python(value)


class QueueFilterForm(forms.Form):
    degenerate = _TriState(required=False)
    flagged = _TriState(required=False)
    flag_status = forms.ChoiceField(required=False, choices=[("", "any")] + Flag.Status.choices)
    reason = forms.CharField(required=False, max_length=100)
    model = forms.CharField(required=False, max_length=200)
    kernel_profile = forms.CharField(required=False, max_length=100)
    temperature_min = forms.FloatField(required=False, label="temperature min")
    temperature_max = forms.FloatField(required=False, label="temperature max")
    range = forms.ChoiceField(required=False, choices=[("", "any time")] + [(k, f"last {k}") for k in RANGE_PRESETS])
    received_after = forms.DateTimeField(required=False, label="received after")
    received_before = forms.DateTimeField(required=False, label="received before")
    q = forms.CharField(required=False, max_length=500, label="text search")
    sort = forms.ChoiceField(required=False, choices=[("time", "newest first"), ("severity", "most severe first")])

    def clean(self):
        data = super().clean()
        low, high = data.get("temperature_min"), data.get("temperature_max")
        if low is not None and high is not None and low > high:
            self.add_error("temperature_max", f"is below temperature min ({high} < {low}); swap them")
        after, before = data.get("received_after"), data.get("received_before")
        if after and before and after >= before:
            self.add_error("received_before", "must be later than received after")
        return data

    def filters(self) -> dict:
        """The selector's filter keys (selectors.transcript_list)."""
        data = self.cleaned_data
        filters = {k: data[k] for k in ("degenerate", "flagged", "temperature_min", "temperature_max",
                                        "received_after", "received_before") if data.get(k) is not None}
        filters.update({k: data[k] for k in ("flag_status", "reason", "model", "kernel_profile", "q") if data.get(k)})
        if data.get("range") and not data.get("received_after"):
            filters["received_after"] = timezone.now() - RANGE_PRESETS[data["range"]]
        return filters

    def error_list(self) -> list[str]:
        """Each bad field in words, e.g. "temperature min: Enter a number (got 'abc')"."""
        lines = []
        for name, errors in self.errors.as_data().items():
            field = self.fields.get(name)
            label = (field.label or name.replace("_", " ")) if field else "filters"
            raw = self.data.get(self.add_prefix(name)) if field else None
            got = f" (got {raw[:40]!r})" if raw and any(e.code in ("invalid", "invalid_choice") for e in errors) else ""
            text = " ".join(str(message).rstrip(".") for e in errors for message in e)
            lines.append(f"{label}: {text}{got}.")
        return lines


def _filter_query(params: QueryDict) -> QueryDict:
    """The filter part of a query string (no cursor), for links and the bulk form's hidden fields."""
    query = QueryDict(mutable=True)
    for name in QueueFilterForm.base_fields:
        value = params.get(name)
        if value not in (None, ""):
            query[name] = value
    return query


class TranscriptListView(View):
    """GET /transcripts/ — the queue, one cursor page at a time."""

    template_name = "triage/transcript_list.html"

    def get(self, request):
        form = QueueFilterForm(request.GET)
        query = _filter_query(request.GET)
        context = {
            "form": form, "params": request.GET, "filter_params": list(query.items()),
            "flag_statuses": Flag.Status.values, "known_reasons": KNOWN_REASONS, "flag_reasons": USER_FLAG_REASONS,
            "can_flag": can_flag(request.user), "can_experiment": can_experiment(request.user),
            **selectors.queue_choices(), "page": None, "filter_errors": [],
        }
        if not form.is_valid():
            context["filter_errors"] = form.error_list()
            return render(request, self.template_name, context, status=400)
        try:
            page = selectors.transcript_queue_page(filters=form.filters(), sort=form.cleaned_data["sort"] or "time",
                                                   cursor=request.GET.get("cursor") or None, page_size=PAGE_SIZE)
        except selectors.InvalidCursor as exc:
            first_page = reverse("transcript-list") + ("?" + query.urlencode() if query else "")
            context["filter_errors"] = [f"Page not shown: {exc}."]
            context["first_page_url"] = first_page
            return render(request, self.template_name, context, status=400)

        def link(cursor):
            linked = query.copy()
            linked["cursor"] = cursor
            return "?" + linked.urlencode()

        context.update(page=page, transcripts=page.rows,
                       older_url=link(page.older) if page.older else None,
                       newer_url=link(page.newer) if page.newer else None)
        return render(request, self.template_name, context)


# --- bulk actions ------------------------------------------------------------------------


class BulkInputError(ValueError):
    """Bad bulk input; the message says what to fix."""


def _back(request):
    """Back to the queue page the action came from (its filters and cursor)."""
    target = request.POST.get("next") or ""
    if target.startswith("/transcripts/") and url_has_allowed_host_and_scheme(
            target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return redirect(target)
    return redirect("transcript-list")


def _selected(request) -> list:
    """The selected transcripts, in the order given. Raises BulkInputError."""
    raw = [value.strip() for value in request.POST.getlist("ids") if value.strip()]
    if not raw:
        raise BulkInputError("no rows selected: tick the checkboxes of the transcripts first (or 'select all on this page')")
    if len(raw) > BULK_MAX:
        raise BulkInputError(f"{len(raw)} rows selected; at most {BULK_MAX} at a time")
    bad = [value for value in raw if not value.isdigit() or int(value) >= 2**63]
    if bad:
        raise BulkInputError(f"not transcript ids: {', '.join(repr(v[:20]) for v in bad[:5])}")
    ids = list(dict.fromkeys(int(value) for value in raw))
    transcripts, missing = selectors.transcripts_by_ids(ids=ids)
    if missing:
        raise BulkInputError(f"unknown transcript id{'s' if len(missing) > 1 else ''} "
                             f"{', '.join(map(str, missing[:10]))}{' …' if len(missing) > 10 else ''} "
                             "(deleted meanwhile?); nothing was done")
    return transcripts


@require_POST
def bulk_flag_view(request):
    if not can_flag(request.user):
        raise PermissionDenied("Only ops and engineers may flag transcripts.")
    reason = request.POST.get("reason") or ""
    try:
        if reason not in dict(USER_FLAG_REASONS):
            raise BulkInputError(f"choose a flag reason ({', '.join(dict(USER_FLAG_REASONS))}), got {reason!r}")
        transcripts = _selected(request)
    except BulkInputError as exc:
        messages.error(request, f"Nothing flagged: {exc}.")
        return _back(request)
    flags.flags_create_bulk(transcripts=transcripts, reason=reason, note=(request.POST.get("note") or "")[:4000],
                            user=request.user, source="ui")
    messages.success(request, f"Flagged {len(transcripts)} transcript{'s' if len(transcripts) > 1 else ''} "
                              f"({reason}).")
    return _back(request)


@require_POST
def bulk_experiment_view(request):
    if not can_experiment(request.user):
        raise PermissionDenied("Only engineers may start experiments.")
    try:
        transcripts = _selected(request)
        experiment = experiment_services.experiment_start(
            transcripts=[t.pk for t in transcripts], user=request.user, via="ui",
            selection={"queue": _filter_query(_unprefixed(request.POST)).dict()})
    except BulkInputError as exc:
        messages.error(request, f"Experiment suite not started: {exc}.")
        return _back(request)
    except ExperimentInputError as exc:
        messages.error(request, "Experiment suite not started — " + "; ".join(f"{k}: {v}" for k, v in exc.errors.items()))
        return _back(request)
    messages.success(request, f"Started experiment {experiment.pk}: a suite across {len(transcripts)} "
                              f"transcript{'s' if len(transcripts) > 1 else ''}.")
    return redirect("experiment-detail", pk=experiment.pk)


def _unprefixed(post: QueryDict) -> QueryDict:
    """The bulk form carries the queue's filters as filter-NAME (its own fields use reason, note)."""
    query = QueryDict(mutable=True)
    for key, value in post.items():
        if key.startswith("filter-"):
            query[key.removeprefix("filter-")] = value
    return query


@require_POST
def bulk_export_view(request) -> HttpResponse:
    """The selected rows, or every row of the queue's current filter, as CSV or JSONL."""
    export_format = request.POST.get("format") or "csv"
    try:
        if export_format not in export.EXPORT_FORMATS:
            raise BulkInputError(f"'{export_format[:20]}' is not an export format; use csv or jsonl")
        if request.POST.get("scope") == "filter":
            form = QueueFilterForm(_unprefixed(request.POST))
            if not form.is_valid():
                raise BulkInputError("the filters are not valid: " + " ".join(form.error_list()))
            filters = form.filters()
        else:
            filters = {"ids": [t.pk for t in _selected(request)]}
    except BulkInputError as exc:
        messages.error(request, f"Nothing exported: {exc}.")
        return _back(request)
    return export.export_response(queryset=selectors.transcript_list(filters=filters), export_format=export_format)
