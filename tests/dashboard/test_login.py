from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from tests.dashboard.factories import PASSWORD, user_create

pytestmark = pytest.mark.django_db
URL = reverse("ladder:login")


def test_it_logs_a_viewer_in_and_back_to_the_page_asked_for(client: Client) -> None:
    user_create("viewer")
    response = client.post(
        URL, {"username": "viewer", "password": PASSWORD, "next": reverse("ladder:catalog")}
    )
    assert response.status_code == 302
    assert response["Location"] == reverse("ladder:catalog")
    assert client.get(reverse("ladder:catalog")).status_code == 200


def test_it_refuses_a_wrong_password_in_place(client: Client) -> None:
    user_create("viewer")
    response = client.post(URL, {"username": "viewer", "password": "nope"})
    assert response.status_code == 200
    assert 'class="error"' in response.content.decode()


def test_it_refuses_a_login_without_a_csrf_token() -> None:
    user_create("viewer")
    client = Client(enforce_csrf_checks=True)
    assert client.post(URL, {"username": "viewer", "password": PASSWORD}).status_code == 403


def test_it_logs_out_by_post_only(client: Client) -> None:
    client.force_login(user_create("viewer"))
    assert client.get(reverse("ladder:logout")).status_code == 405
    assert client.post(reverse("ladder:logout")).status_code == 302
    assert client.get(reverse("ladder:overview")).status_code == 302
