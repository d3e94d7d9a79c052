"""Pages (templates). Reads go through selectors; views hold no business logic."""

from django.db.models import Count, Q
from django.views.generic import DetailView, ListView

from triage.models import Transcript


class TranscriptListView(ListView):
    model = Transcript
    paginate_by = 50
    template_name = "triage/transcript_list.html"
    context_object_name = "transcripts"

    def get_queryset(self):
        params = self.request.GET
        qs = Transcript.objects.select_related("kernel_profile").annotate(flag_count=Count("flags")).order_by("-received_at", "-id")
        if params.get("degenerate") in ("1", "true"):
            qs = qs.filter(degenerate=True)
        if params.get("flagged") in ("1", "true"):
            qs = qs.filter(flagged=True)
        if params.get("model"):
            qs = qs.filter(model=params["model"])
        if params.get("q"):
            qs = qs.filter(Q(response__icontains=params["q"]) | Q(request_id__icontains=params["q"]))
        return qs.defer("messages", "logprobs", "metrics")

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["models"] = Transcript.objects.order_by().values_list("model", flat=True).distinct()
        context["params"] = self.request.GET
        totals = Transcript.objects.aggregate(
            total=Count("id"), degenerate=Count("id", filter=Q(degenerate=True)),
            flagged=Count("id", filter=Q(flagged=True)),
        )
        context["totals"] = totals
        return context


class TranscriptDetailView(DetailView):
    model = Transcript
    template_name = "triage/transcript_detail.html"
    context_object_name = "transcript"

    def get_queryset(self):
        return Transcript.objects.select_related("kernel_profile").prefetch_related("flags__user")
