"""Pages (templates). Reads go through selectors, writes through services; views hold no
business logic."""

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_POST
from django.views.generic import DetailView

from kernels.settings import KernelSettings, KernelSettingsError
from triage import content_codec, rendering, selectors
from triage.models import Flag, Transcript
from triage.experiments import selectors as experiment_selectors
from triage.roles import can_experiment, can_flag
from triage.services import flags

class FlagForm(forms.Form):
    reason = forms.ChoiceField(choices=[c for c in Flag.Reason.choices if c[0] != Flag.Reason.AUTO])
    note = forms.CharField(required=False, max_length=4000, widget=forms.Textarea(attrs={"rows": 2}))


class FlagStatusForm(forms.Form):
    status = forms.ChoiceField(choices=Flag.Status.choices)


class TranscriptDetailView(DetailView):
    template_name = "triage/transcript_detail.html"
    context_object_name = "transcript"

    def get_object(self, queryset=None):
        return selectors.transcript_get(transcript_id=self.kwargs["pk"])

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        t = self.object
        # Stored content may be NUL-escaped (PostgreSQL can't hold U+0000): show it as sent,
        # with NUL drawn as ␀ since HTML cannot carry it.
        decode = lambda value: content_codec.decode(value, t.content_encoding)  # noqa: E731
        response_text = decode(t.response)
        context["response_segments"] = highlight_segments(response_text, (t.metrics or {}).get("highlights") or [])
        context["response_blocks"] = rendering.blocks_with_highlights(response_text, context["response_segments"])
        context["conversation"] = [
            {"role": m.get("role", "?"), "blocks": rendering.blocks_with_highlights(text)}
            for m in (t.messages or []) if isinstance(m, dict)
            for text in [_message_text(decode(m)).replace("\x00", "\u2400")]
        ]
        context["kernel_label"] = _kernel_label(t.kernel)
        context["can_flag"] = can_flag(self.request.user)
        context["can_experiment"] = can_experiment(self.request.user)
        context["past_experiments"] = experiment_selectors.experiment_list(transcript_id=t.pk)[:20]
        if context["can_experiment"]:
            from django.conf import settings

            from triage.views_experiments import profiles_for_form, start_form_defaults
            try:
                context["default_arms"] = start_form_defaults(t)
            except Exception as exc:  # noqa: BLE001 - no stock profile / backend yet: say so, show the form empty
                context["default_arms"] = []
                messages.warning(self.request, f"Default arms unavailable: {exc}", extra_tags="experiment")
            context["profiles"] = profiles_for_form()
            context["default_samples"] = settings.EXPERIMENT_DEFAULT_SAMPLES
        context["flag_form"] = FlagForm()
        context["statuses"] = Flag.Status.choices
        return context


def highlight_segments(text: str, highlights: list) -> list[dict]:
    """Split the response into plain and highlighted pieces (loops, invented turns) from the
    verdict's character spans; overlapping spans keep the first."""
    segments, cursor = [], 0
    spans = sorted(
        (h for h in highlights if isinstance(h, dict) and isinstance(h.get("start"), int) and isinstance(h.get("end"), int)),
        key=lambda h: h["start"],
    )
    for span in spans:
        start, end = max(span["start"], cursor), min(span["end"], len(text))
        if start >= end:
            continue
        if start > cursor:
            segments.append({"text": text[cursor:start], "kind": ""})
        segments.append({"text": text[start:end], "kind": span.get("kind", "highlight"), "label": span.get("label", "")})
        cursor = end
    if cursor < len(text) or not segments:
        segments.append({"text": text[cursor:], "kind": ""})
    for segment in segments:
        segment["text"] = segment["text"].replace("\x00", "\u2400")
    return segments


def _kernel_label(kernel) -> str:
    try:
        return KernelSettings.from_dict(kernel or None).label
    except (KernelSettingsError, TypeError):
        return str(kernel)


def _message_text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


@require_POST
def flag_create_view(request, pk: int):
    if not can_flag(request.user):
        raise PermissionDenied("Only ops and engineers may flag transcripts.")
    transcript = get_object_or_404(Transcript, pk=pk)
    form = FlagForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Flag not saved: " + "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()),
                       extra_tags="flags")
    else:
        flags.flag_create(transcript=transcript, reason=form.cleaned_data["reason"],
                          note=form.cleaned_data["note"], user=request.user, source="ui")
        messages.success(request, "Flagged.", extra_tags="flags")
    return redirect(reverse("transcript-detail", args=[pk]) + "#flags")


@require_POST
def flag_status_view(request, pk: int, flag_id: int):
    if not can_flag(request.user):
        raise PermissionDenied("Only ops and engineers may change flags.")
    flag = get_object_or_404(Flag, pk=flag_id, transcript_id=pk)
    form = FlagStatusForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Unknown status.", extra_tags="flags")
    else:
        try:
            flags.flag_update_status(flag=flag, status=form.cleaned_data["status"], user=request.user)
            messages.success(request, f"Flag {flag.pk} is now {form.cleaned_data['status']}.", extra_tags="flags")
        except flags.FlagTransitionError as exc:
            messages.error(request, str(exc), extra_tags="flags")
    return redirect(reverse("transcript-detail", args=[pk]) + "#flags")
