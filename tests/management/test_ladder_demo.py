from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from ladder import models as m
from ladder.management.commands.ladder_demo import DEMO_CONNECTIONS


@pytest.mark.django_db
def test_it_seeds_demo_connections_pointing_at_the_fake_upstream(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LADDER_ADMIN_PASSWORD", "demo-password-1")
    call_command("ladder_demo", upstream_url="http://127.0.0.1:9999/", stdout=io.StringIO())
    claude = m.Connection.objects.get(pk="demo-claude-max")
    assert claude.base_url == "http://127.0.0.1:9999/claude-oauth/@demo-claude-max"
    assert claude.get_credential()
    assert m.Connection.objects.count() == len(DEMO_CONNECTIONS)


@pytest.mark.django_db
def test_it_keeps_operator_edits_when_run_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LADDER_ADMIN_PASSWORD", "demo-password-1")
    call_command("ladder_demo", stdout=io.StringIO())
    m.Connection.objects.filter(pk="demo-codex-plus").update(enabled=False)
    out = io.StringIO()
    call_command("ladder_demo", stdout=out)
    assert not m.Connection.objects.get(pk="demo-codex-plus").enabled
    assert f"0 created, {len(DEMO_CONNECTIONS)} kept" in out.getvalue()


@pytest.mark.django_db
def test_it_creates_the_admin_login_with_the_given_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LADDER_ADMIN_PASSWORD", "s3cret-from-env")
    out = io.StringIO()
    call_command("ladder_demo", stdout=out)
    admin = get_user_model().objects.get(username="admin")
    assert admin.is_superuser
    assert admin.check_password("s3cret-from-env")
    assert "s3cret-from-env" not in out.getvalue()


@pytest.mark.django_db
def test_it_generates_and_prints_a_password_when_none_is_given(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    monkeypatch.delenv("LADDER_ADMIN_PASSWORD", raising=False)
    monkeypatch.setattr("django.conf.settings.BASE_DIR", tmp_path)
    out = io.StringIO()
    call_command("ladder_demo", stdout=out)
    printed = out.getvalue().split("password ")[-1].strip()
    assert get_user_model().objects.get(username="admin").check_password(printed)
    again = io.StringIO()
    call_command("ladder_demo", stdout=again)
    assert again.getvalue().split("password ")[-1].strip() == printed
