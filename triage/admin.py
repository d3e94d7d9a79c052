from django import forms
from django.contrib import admin, messages
from django.utils import timezone

from triage import models


@admin.register(models.ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["name", "source", "prefix", "scopes", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = ["prefix", "created_at", "last_used_at", "revoked_at", "created_by"]
    fields = ["name", "source", "scopes", *readonly_fields]
    actions = ["revoke"]

    def has_add_permission(self, request) -> bool:
        # The secret is shown once by `manage.py create_api_key`; the admin never sees it.
        return False

    @admin.action(description="Revoke selected keys")
    def revoke(self, request, queryset):
        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"Revoked {count} key(s).", messages.SUCCESS)


class BackendForm(forms.ModelForm):
    base_url = forms.URLField(assume_scheme="http", help_text="e.g. http://127.0.0.1:8001/v1")
    api_key = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="Write-only: leave empty to keep the stored key.",
    )

    class Meta:
        model = models.Backend
        fields = ["name", "kind", "base_url", "model_name", "api_key"]

    def clean_api_key(self):
        value = self.cleaned_data.get("api_key")
        return value if value else (self.instance.api_key if self.instance.pk else "")


@admin.register(models.Backend)
class BackendAdmin(admin.ModelAdmin):
    form = BackendForm
    list_display = ["name", "kind", "base_url", "model_name"]


@admin.register(models.KernelProfile)
class KernelProfileAdmin(admin.ModelAdmin):
    list_display = ["name", "settings", "backend"]
    list_select_related = ["backend"]


class FlagInline(admin.TabularInline):
    model = models.Flag
    extra = 0
    fields = ["reason", "status", "note", "user", "source", "created_at"]
    readonly_fields = ["created_at"]


@admin.register(models.Transcript)
class TranscriptAdmin(admin.ModelAdmin):
    list_display = ["id", "source", "request_id", "model", "received_at", "temperature", "degenerate", "flagged"]
    list_filter = ["degenerate", "flagged", "model", "kernel_profile"]
    search_fields = ["request_id", "response"]
    date_hierarchy = "received_at"
    list_select_related = ["kernel_profile"]
    inlines = [FlagInline]


@admin.register(models.Flag)
class FlagAdmin(admin.ModelAdmin):
    list_display = ["id", "transcript", "reason", "status", "source", "user", "created_at"]
    list_filter = ["reason", "status"]
    list_select_related = ["transcript", "user"]


class ArmInline(admin.TabularInline):
    model = models.Arm
    extra = 0


@admin.register(models.Experiment)
class ExperimentAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "status", "verdict", "samples_per_arm", "created_at"]
    list_filter = ["status", "verdict"]
    inlines = [ArmInline]


@admin.register(models.Arm)
class ArmAdmin(admin.ModelAdmin):
    list_display = ["id", "experiment", "name", "role", "kernel_profile"]


@admin.register(models.Sample)
class SampleAdmin(admin.ModelAdmin):
    list_display = ["id", "arm", "index", "seed", "degenerate", "finish_reason", "completion_tokens"]
    list_filter = ["degenerate"]


@admin.register(models.Divergence)
class DivergenceAdmin(admin.ModelAdmin):
    list_display = ["id", "experiment", "arm", "mean_kl", "top1_agreement", "first_over_threshold"]
