from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from ladder import models as m
from tests.dashboard.factories import catalog_row, connection_create, editor_create, model_row, user_create

pytestmark = pytest.mark.django_db
URL = reverse("ladder:catalog")
NEW_URL = reverse("ladder:catalog_new")


def entry_url(entry: m.BillingCatalogEntry) -> str:
    return reverse("ladder:catalog_entry", args=[entry.pk])


@pytest.fixture
def entry() -> m.BillingCatalogEntry:
    return catalog_row("acme", "oauth", "metered", "unknown")


@pytest.fixture
def editor(client: Client) -> Client:
    client.force_login(editor_create())
    return client


@pytest.fixture
def viewer(client: Client) -> Client:
    client.force_login(user_create("viewer"))
    return client


VALID = {
    "billing": "subscription",
    "overage": "hard-stop",
    "source_url": "https://acme.example/plans",
    "notes": "Pro",
}


def test_it_sends_anonymous_visitors_to_the_login_page(client: Client) -> None:
    response = client.get(URL)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("ladder:login"))


def test_it_shows_the_catalog_to_a_viewer_without_edit_links(
    viewer: Client, entry: m.BillingCatalogEntry
) -> None:
    html = viewer.get(URL).content.decode()
    assert f'id="entry-{entry.pk}"' in html
    assert f'href="{entry_url(entry)}"' not in html
    assert "editing needs a staff login" in html


def test_it_flags_uncurated_kinds_at_the_top(viewer: Client) -> None:
    connection_create("mystery-1", provider="mystery", auth_type="apikey")
    html = viewer.get(URL).content.decode()
    assert 'id="new-mystery--apikey"' in html
    assert html.index('id="uncurated"') < html.index('id="catalog"')
    assert "used by mystery-1" in html


def test_it_refuses_an_edit_form_to_a_viewer(viewer: Client, entry: m.BillingCatalogEntry) -> None:
    assert viewer.get(entry_url(entry)).status_code == 403


def test_it_refuses_an_edit_by_a_viewer(viewer: Client, entry: m.BillingCatalogEntry) -> None:
    assert viewer.post(entry_url(entry), VALID).status_code == 403
    entry.refresh_from_db()
    assert entry.billing == "metered"
    assert not m.CatalogChange.objects.exists()


def test_it_refuses_an_edit_by_staff_without_the_permission(
    client: Client, entry: m.BillingCatalogEntry
) -> None:
    client.force_login(user_create("staff", staff=True))
    assert client.post(entry_url(entry), VALID).status_code == 403


def test_it_refuses_an_edit_by_a_non_staff_user_with_the_permission(
    client: Client, entry: m.BillingCatalogEntry
) -> None:
    client.force_login(user_create("perm-only", perms=("change_billingcatalogentry",)))
    assert client.post(entry_url(entry), VALID).status_code == 403


def test_it_sends_an_anonymous_edit_to_the_login_page(client: Client, entry: m.BillingCatalogEntry) -> None:
    assert client.post(entry_url(entry), VALID).status_code == 302
    entry.refresh_from_db()
    assert entry.billing == "metered"


def test_it_serves_the_inline_edit_form_to_staff(editor: Client, entry: m.BillingCatalogEntry) -> None:
    html = editor.get(entry_url(entry), HTTP_HX_REQUEST="true").content.decode()
    assert html.lstrip().startswith(f'<div class="catalog-row editing" id="entry-{entry.pk}">')
    assert f'hx-post="{entry_url(entry)}"' in html
    assert '<option value="metered" selected>' in html


def test_it_serves_the_edit_form_as_a_page_without_javascript(
    editor: Client, entry: m.BillingCatalogEntry
) -> None:
    html = editor.get(entry_url(entry)).content.decode()
    assert "<html" in html
    assert f'action="{entry_url(entry)}"' in html


def test_it_saves_an_edit_and_records_who_and_when(editor: Client, entry: m.BillingCatalogEntry) -> None:
    response = editor.post(entry_url(entry), VALID, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    html = response.content.decode()
    assert "Saved (4 changes)" in html
    assert 'id="catalog-history" hx-swap-oob="true"' in html
    entry.refresh_from_db()
    assert (entry.billing, entry.overage, entry.source_url, entry.notes) == (
        "subscription",
        "hard-stop",
        "https://acme.example/plans",
        "Pro",
    )
    assert entry.reviewed_at is not None
    changes = {c.field: (c.old_value, c.new_value, c.changed_by_name) for c in m.CatalogChange.objects.all()}
    assert changes["billing"] == ("metered", "subscription", "editor")
    assert changes["overage"] == ("unknown", "hard-stop", "editor")
    assert set(changes) == {"billing", "overage", "source_url", "notes"}


def test_it_shows_the_history_on_the_catalog_page(editor: Client, entry: m.BillingCatalogEntry) -> None:
    editor.post(entry_url(entry), {**VALID, "notes": ""})
    html = editor.get(URL).content.decode()
    history = html[html.index('id="catalog-history"') :]
    assert (
        "<b>editor</b> changed acme/oauth <code>billing</code>: <del>metered</del> → <ins>subscription</ins>"
        in history
    )


def test_it_records_nothing_when_nothing_changes(editor: Client, entry: m.BillingCatalogEntry) -> None:
    html = editor.post(
        entry_url(entry),
        {"billing": "metered", "overage": "unknown", "source_url": "", "notes": ""},
        HTTP_HX_REQUEST="true",
    ).content.decode()
    assert "No change" in html
    assert not m.CatalogChange.objects.exists()


def test_it_shows_validation_messages_in_place(editor: Client, entry: m.BillingCatalogEntry) -> None:
    response = editor.post(
        entry_url(entry),
        {**VALID, "billing": "free-lunch", "source_url": "not a url"},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 422
    html = response.content.decode()
    assert html.lstrip().startswith(f'<div class="catalog-row editing" id="entry-{entry.pk}">')
    assert "Value &#x27;free-lunch&#x27; is not a valid choice." in html
    assert "Enter a valid URL." in html
    assert 'value="not a url"' in html  # what was typed stays
    entry.refresh_from_db()
    assert entry.billing == "metered"
    assert not m.CatalogChange.objects.exists()


def test_it_redirects_back_to_the_catalog_without_javascript(
    editor: Client, entry: m.BillingCatalogEntry
) -> None:
    response = editor.post(entry_url(entry), VALID)
    assert response.status_code == 302
    assert response["Location"] == f"{URL}#entry-{entry.pk}"


def test_it_refuses_an_edit_without_a_csrf_token(entry: m.BillingCatalogEntry) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(editor_create())
    assert client.post(entry_url(entry), VALID).status_code == 403
    entry.refresh_from_db()
    assert entry.billing == "metered"


def test_it_accepts_the_csrf_token_of_the_body_hx_headers(entry: m.BillingCatalogEntry) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(editor_create())
    html = client.get(URL).content.decode()
    token = html.split('hx-headers=\'{"X-CSRFToken": "', 1)[1].split('"', 1)[0]
    response = client.post(entry_url(entry), VALID, HTTP_HX_REQUEST="true", HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 200
    entry.refresh_from_db()
    assert entry.billing == "subscription"


def test_it_curates_an_uncurated_kind_inline(editor: Client) -> None:
    model_row("mystery", "mystery-1")
    connection_create("mystery-1", provider="mystery", auth_type="apikey")
    response = editor.post(
        NEW_URL, {"provider": "mystery", "auth_type": "apikey", **VALID}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    created = m.BillingCatalogEntry.objects.get(provider="mystery", auth_type="apikey")
    assert created.billing == "subscription"
    assert f'id="entry-{created.pk}"' in response.content.decode()
    assert m.CatalogChange.objects.filter(entry=created, field="billing", new_value="subscription").exists()
    assert 'id="new-mystery--apikey"' not in editor.get(URL).content.decode()


def test_it_refuses_a_duplicate_row(editor: Client, entry: m.BillingCatalogEntry) -> None:
    response = editor.post(
        NEW_URL, {"provider": "acme", "auth_type": "oauth", **VALID}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 422
    assert "already exists" in response.content.decode()
    assert m.BillingCatalogEntry.objects.filter(provider="acme").count() == 1


def test_it_refuses_a_new_row_by_a_viewer(viewer: Client) -> None:
    assert viewer.post(NEW_URL, {"provider": "mystery", "auth_type": "apikey", **VALID}).status_code == 403
    assert not m.BillingCatalogEntry.objects.filter(provider="mystery").exists()


def test_it_refuses_a_new_row_without_a_csrf_token() -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(editor_create())
    assert client.post(NEW_URL, {"provider": "mystery", "auth_type": "apikey", **VALID}).status_code == 403
    assert not m.BillingCatalogEntry.objects.filter(provider="mystery").exists()


def test_it_changes_the_pool_preview_once_curated(editor: Client) -> None:
    model_row("mystery", "mystery-1")
    connection_create("mystery-1", provider="mystery", auth_type="apikey")
    preview = reverse("ladder:pool_preview") + "?model=auto/subscription"
    assert 'data-reason="uncurated_provider"' in editor.get(preview).content.decode()
    editor.post(NEW_URL, {"provider": "mystery", "auth_type": "apikey", **VALID})
    html = editor.get(preview).content.decode()
    assert 'data-reason="uncurated_provider"' not in html
    assert 'data-connection="mystery-1" data-reason="no_reading"' in html


def test_it_starts_an_uncurated_kind_as_unknown_never_a_guess(editor: Client) -> None:
    connection_create("mystery-1", provider="mystery", auth_type="apikey")
    html = editor.get(URL).content.decode()
    form = html[html.index('id="new-mystery--apikey"') :]
    assert '<option value="unknown" selected>unknown</option>' in form[: form.index('name="overage"')]
    assert form.count('value="unknown" selected') >= 2


def test_it_shows_a_refused_new_row_on_its_own_page_without_javascript(editor: Client) -> None:
    connection_create("mystery-1", provider="mystery", auth_type="apikey")
    data = {"provider": "mystery", "auth_type": "apikey", **VALID, "overage": "maybe"}
    response = editor.post(NEW_URL, data)
    assert response.status_code == 422
    html = response.content.decode()
    assert "<h1>Curate mystery/apikey</h1>" in html
    assert "Value &#x27;maybe&#x27; is not a valid choice." in html
    assert not m.BillingCatalogEntry.objects.filter(provider="mystery").exists()
