from django.apps import AppConfig


class LadderConfig(AppConfig):
    name = "ladder"
    verbose_name = "OmniRoute Ladder"
    default_auto_field = "django.db.models.BigAutoField"
