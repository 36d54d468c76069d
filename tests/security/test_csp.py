from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from tests.security.pages import admin_pages, dashboard_pages, html_of, inline_code
from tests.security.rows import Rows, rows_create

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "templates"
STATIC = ROOT / "static"


def directives(header: str) -> dict[str, list[str]]:
    parsed: dict[str, list[str]] = {}
    for part in header.split(";"):
        words = part.split()
        if words:
            parsed[words[0]] = words[1:]
    return parsed


@pytest.fixture
def rows() -> Rows:
    return rows_create()


@pytest.fixture
def superuser_client(client: Client) -> Client:
    client.force_login(User.objects.create_superuser("root", "root@example.test", "pw-Root-12345"))
    return client


def assert_strict_policy(header: str | None, url: str) -> None:
    assert header, f"{url}: no Content-Security-Policy"
    policy = directives(header)
    assert policy["default-src"] == ["'self'"], url
    for name in ("script-src", "style-src"):
        assert policy[name] == ["'self'"], (url, name, policy[name])
    assert policy["object-src"] == ["'none'"]
    assert policy["base-uri"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert policy["form-action"] == ["'self'"]
    for loophole in ("unsafe-inline", "unsafe-eval", "unsafe-hashes", "nonce-"):
        assert loophole not in header, (url, loophole)


def test_it_sends_the_policy_on_every_kind_of_response(client: Client, rows: Rows) -> None:
    answers = {
        "login page": client.get(reverse("ladder:login")),
        "redirect to login": client.get(reverse("ladder:overview")),
        "admin login": client.get(reverse("admin:login")),
        "404 page": client.get("/no-such-page/"),
        "API JSON": client.get("/healthz"),
        "API error": client.get(reverse("ladder:connections")),
        "static file": client.get("/static/ladder.js"),
    }
    for what, response in answers.items():
        assert_strict_policy(response.get("Content-Security-Policy"), what)
    assert answers["redirect to login"].status_code == 302
    assert answers["API error"].status_code == 401


def test_it_finds_inline_code_when_there_is_some() -> None:
    """The scanner the next tests rely on does see each kind of inline code."""
    html = (
        '<script>alert(1)</script><style>p{}</style><p style="color:red" onclick="x()">'
        '<a href="javascript:void(0)">x</a><div hx-on:click="x()"></div>'
        '<script src="https://cdn.example/htmx.js"></script><script src="/static/ok.js"></script>'
        '<script type="application/json" id="data">{}</script>'
    )
    problems = inline_code(html)
    assert len(problems) == 7, problems


def test_no_template_carries_inline_script_or_style() -> None:
    found = {}
    for path in sorted(TEMPLATES.rglob("*.html")):
        # Template tags stand in for attribute values; the markup around them is what counts.
        text = re.sub(r"{%.*?%}|{{.*?}}", "X", path.read_text())
        problems = inline_code(text)
        if problems:
            found[str(path.relative_to(ROOT))] = problems
    assert not found, found
    assert any(TEMPLATES.rglob("*.html"))


def test_every_dashboard_page_renders_without_inline_code(superuser_client: Client, rows: Rows) -> None:
    seen = 0
    for url, headers in dashboard_pages(rows):
        status, content_type, body = html_of(superuser_client, url, headers)
        assert status == 200, (url, status)
        assert content_type.startswith("text/html")
        assert inline_code(body) == [], (url, inline_code(body))
        seen += 1
    assert seen == 10


def test_the_login_pages_render_without_inline_code(client: Client) -> None:
    for url in (reverse("ladder:login"), reverse("admin:login")):
        status, _, body = html_of(client, url)
        assert status == 200
        assert inline_code(body) == [], (url, inline_code(body))


def test_every_admin_page_renders_without_inline_code(superuser_client: Client, rows: Rows) -> None:
    checked = []
    for url in admin_pages():
        status, content_type, body = html_of(superuser_client, url)
        if status in (302, 403) or not content_type.startswith("text/html"):
            continue  # a page this model does not offer (add on a read-only model, the singleton's list)
        assert status == 200, (url, status)
        assert inline_code(body) == [], (url, inline_code(body))
        checked.append(url)
    # Every ladder model and django-celery-beat's periodic task form (its inline script is overridden).
    assert reverse("admin:ladder_connection_change", args=[rows.connection.pk]) in checked
    assert reverse("admin:django_celery_beat_periodictask_add") in checked
    assert len(checked) > 40, checked


class MetaConfig(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.config: dict[str, object] | None = None
        self.scripts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "meta" and attributes.get("name") == "htmx-config":
            self.config = json.loads(attributes.get("content") or "{}")
        if tag == "script" and attributes.get("src"):
            self.scripts.append(str(attributes["src"]))


def test_htmx_is_configured_for_the_policy(superuser_client: Client, rows: Rows) -> None:
    parser = MetaConfig()
    parser.feed(superuser_client.get(reverse("ladder:overview")).content.decode())
    assert parser.config is not None
    assert parser.config["allowEval"] is False  # no hx-on, no eval'd trigger filters
    assert parser.config["includeIndicatorStyles"] is False  # htmx would inject a <style> element
    assert parser.scripts == ["/static/vendor/htmx.min.js", "/static/ladder.js"]


def test_the_static_scripts_evaluate_no_strings() -> None:
    for path in (STATIC / "ladder.js", STATIC / "beat-periodictask.js"):
        text = path.read_text()
        assert not re.search(r"\beval\s*\(|new Function|setTimeout\(\s*['\"]|innerHTML", text), path
    assert "data-poll" in (STATIC / "ladder.js").read_text()  # polling pauses while the tab is hidden
