import os
from typing import Any

from celery import Celery
from celery.signals import after_setup_logger, after_setup_task_logger

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "omniroute.settings")

app = Celery("omniroute")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@after_setup_logger.connect
@after_setup_task_logger.connect
def redact_secrets(logger: Any, **kwargs: Any) -> None:
    """Celery replaces the root logger's handlers: its own get the filter that settings.LOGGING gives ours."""
    from ladder.security.logredact import SecretRedactingFilter

    for handler in logger.handlers:
        handler.addFilter(SecretRedactingFilter())
