from django.apps import AppConfig


class LadderConfig(AppConfig):
    name = "ladder"
    verbose_name = "OmniRoute Ladder"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from ladder import checks  # noqa: F401  (registers the deployment checks)
