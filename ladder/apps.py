from django.apps import AppConfig


class LadderConfig(AppConfig):
    name = "ladder"
    verbose_name = "OmniRoute Ladder"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save, pre_save

        from ladder import checks  # noqa: F401  (registers the deployment checks)
        from ladder.models import UsageEvent
        from ladder.services import spend

        # Spend counters follow every model save and delete of a usage event (services.spend).
        pre_save.connect(spend.usage_event_saving, sender=UsageEvent, dispatch_uid="spend-saving")
        post_save.connect(spend.usage_event_saved, sender=UsageEvent, dispatch_uid="spend-saved")
        post_delete.connect(spend.usage_event_deleted, sender=UsageEvent, dispatch_uid="spend-deleted")
