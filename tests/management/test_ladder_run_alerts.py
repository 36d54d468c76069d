"""`make run` with LADDER_ALERT_WEBHOOK_URL: a default webhook channel, made once."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.management.base import CommandError

from ladder import models as m
from ladder.management.commands.ladder_run import Command

pytestmark = pytest.mark.django_db


def run_step() -> str:
    out = io.StringIO()
    command = Command(stdout=out)
    command._alert_channel()
    return out.getvalue()


def test_it_makes_a_webhook_channel_for_the_url_once(settings: Any) -> None:
    settings.LADDER_ALERT_WEBHOOK_URL = "https://hooks.example.com/ladder/s3cret-path"
    assert "created" in run_step()
    assert "kept" in run_step()
    channel = m.AlertChannel.objects.get()
    assert (channel.kind, channel.url, channel.enabled) == (
        "webhook",
        settings.LADDER_ALERT_WEBHOOK_URL,
        True,
    )
    assert "s3cret-path" not in run_step()


def test_it_moves_the_channel_to_a_new_url_and_keeps_the_rest(settings: Any) -> None:
    settings.LADDER_ALERT_WEBHOOK_URL = "https://hooks.example.com/first"
    run_step()
    channel = m.AlertChannel.objects.get()
    channel.set_secret("whsec_kept")
    channel.save()
    settings.LADDER_ALERT_WEBHOOK_URL = "https://receiver.example.org/second"
    assert "moved there" in run_step()
    channel = m.AlertChannel.objects.get()
    assert channel.url == "https://receiver.example.org/second"
    assert channel.secret == "whsec_kept"
    assert "kept" in run_step()


def test_it_makes_nothing_without_the_url(settings: Any) -> None:
    settings.LADDER_ALERT_WEBHOOK_URL = ""
    assert run_step() == ""
    assert not m.AlertChannel.objects.exists()


def test_it_refuses_a_url_that_is_not_http(settings: Any) -> None:
    settings.LADDER_ALERT_WEBHOOK_URL = "ftp://example.com/x"
    with pytest.raises(CommandError, match="LADDER_ALERT_WEBHOOK_URL: .*http"):
        run_step()
