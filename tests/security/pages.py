"""Every page an operator can open, and what a page must not carry under the Content-Security-Policy."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html.parser import HTMLParser

from django.contrib import admin
from django.db.models import Model
from django.test import Client
from django.urls import NoReverseMatch, reverse

from tests.security.rows import Rows

URL_ATTRIBUTES = ("href", "src", "action", "formaction", "hx-get", "hx-post", "hx-put", "hx-patch")
EXTERNAL = re.compile(r"^\s*(?:[a-z][a-z0-9+.-]*:)?//", re.IGNORECASE)


class InlineCodeFinder(HTMLParser):
    """Inline scripts, styles, event handlers, javascript: URLs and resources from other origins."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        line = self.getpos()[0]
        if tag == "script" and not attributes.get("src") and attributes.get("type") != "application/json":
            self.problems.append(f"line {line}: inline <script>")
        if tag == "style":
            self.problems.append(f"line {line}: inline <style>")
        for name, value in attributes.items():
            if name == "style":
                self.problems.append(f"line {line}: style attribute on <{tag}>")
            elif name.startswith("on"):
                self.problems.append(f"line {line}: event handler {name} on <{tag}>")
            elif name.startswith(("hx-on", "data-hx-on")):
                self.problems.append(f"line {line}: {name} (htmx evaluates it) on <{tag}>")
            if name in URL_ATTRIBUTES:
                self.urls.append(value)
                if value.strip().lower().startswith("javascript:"):
                    self.problems.append(f"line {line}: javascript: URL in {name}")
                if tag in ("script", "link", "img", "iframe", "object", "embed") and EXTERNAL.match(value):
                    self.problems.append(f"line {line}: <{tag}> from another origin: {value}")

    handle_startendtag = handle_starttag


def inline_code(html: str) -> list[str]:
    finder = InlineCodeFinder()
    finder.feed(html)
    finder.close()
    return finder.problems


def page_urls(html: str) -> list[str]:
    finder = InlineCodeFinder()
    finder.feed(html)
    finder.close()
    return finder.urls


def _admin_url(name: str, *args: object) -> str | None:
    try:
        return reverse(name, args=args)
    except NoReverseMatch:
        return None


def admin_pages() -> Iterator[str]:
    """The admin's index, app pages, and for every registered model its list, add page and, for its
    first row, change, history and delete-confirmation pages."""
    yield reverse("admin:index")
    yield reverse("admin:password_change")
    labels: set[str] = set()
    for model in admin.site._registry:
        opts = model._meta
        if opts.app_label not in labels:
            labels.add(opts.app_label)
            yield reverse("admin:app_list", args=[opts.app_label])
        base = f"admin:{opts.app_label}_{opts.model_name}"
        yield reverse(f"{base}_changelist")
        yield reverse(f"{base}_add")
        first: Model | None = model._default_manager.order_by("pk").first()
        if first is not None:
            for view in ("change", "history", "delete"):
                url = _admin_url(f"{base}_{view}", first.pk)
                if url:
                    yield url


def dashboard_pages(rows: Rows) -> Iterator[tuple[str, dict[str, str]]]:
    """(url, extra headers): each dashboard page, and the partial its htmx polling asks for."""
    htmx = {"HX-Request": "true"}
    connection_url = reverse("ladder:connection_page", args=[rows.connection.pk])
    entry = rows.objects["billingcatalogentry"]
    for url in (
        reverse("ladder:overview"),
        reverse("ladder:pool_preview"),
        reverse("ladder:pool_preview") + "?model=auto/thrifty",
        connection_url,
        reverse("ladder:catalog"),
        reverse("ladder:catalog_entry", args=[entry.pk]),  # type: ignore[attr-defined]
        reverse("ladder:escalations_page"),
    ):
        yield url, {}
    yield reverse("ladder:overview"), htmx
    yield connection_url, htmx
    yield reverse("ladder:pool_preview") + "?model=auto/subscription", htmx


def html_of(client: Client, url: str, headers: dict[str, str] | None = None) -> tuple[int, str, str]:
    """(status, content type, body) of a GET."""
    response = client.get(url, headers=headers or {})
    return response.status_code, response.get("Content-Type", ""), response.content.decode("utf-8", "replace")
