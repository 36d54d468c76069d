"""The htmx dashboard. Each view serves its full page and, for htmx, the page's partial
("page.html#partial"); every read is built by ladder.dashboard.pages and every write goes
through a service."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import LoginView, LogoutView
from django.core.exceptions import NON_FIELD_ERRORS, ObjectDoesNotExist, PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseClientRedirect
from django_htmx.middleware import HtmxDetails

from ladder.dashboard.chart import chart_range_error
from ladder.dashboard.pages.alerts import alerts_page_build
from ladder.dashboard.pages.catalog import UncuratedKind, catalog_page_build
from ladder.dashboard.pages.connection import connection_page_build
from ladder.dashboard.pages.escalations import timeline_build
from ladder.dashboard.pages.overview import overview_build
from ladder.dashboard.pages.pool_preview import PREVIEW_DEFAULT, preview_build
from ladder.domain.types import BILLINGS, OVERAGES
from ladder.security.login_throttle import ThrottledAuthenticationForm, throttled_answer
from ladder.selectors.catalog import CatalogRow, catalog_changes, catalog_row, catalog_row_of
from ladder.selectors.connections import connection_exists, connection_poll_floor
from ladder.services.alert_delivery import enqueue_test_to
from ladder.services.alert_settings import alert_rule_update
from ladder.services.catalog import EDITABLE_FIELDS, catalog_entry_create, catalog_entry_update
from ladder.services.credentials import credential_import
from ladder.services.refresh.on_demand import refresh_is_pending, refresh_request
from ladder.services.state import RESERVE_MESSAGE, connection_reserve_set

LOGIN_URL = "ladder:login"
CHANGE_CATALOG = "ladder.change_billingcatalogentry"
ADD_CATALOG = "ladder.add_billingcatalogentry"
REFRESH_CONNECTION = "ladder.change_connection"
TEST_CHANNEL = "ladder.change_alertchannel"
CHANGE_RULE = "ladder.change_alertrule"


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def poll_interval_ms() -> int:
    """How often the overview and connection pages re-render their partial (LADDER_DASHBOARD_POLL_S)."""
    return max(200, int(float(settings.LADDER_DASHBOARD_POLL_S) * 1000))


def dashboard_login_required(view: Any) -> Any:
    """login_required; an htmx request (a poll after the session ended) is sent to the login page whole
    instead of swapping the login form into a fragment."""
    guarded = login_required(login_url=LOGIN_URL)(view)

    @wraps(view)
    def wrapper(request: HtmxHttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if request.htmx and not request.user.is_authenticated:
            current = request.htmx.current_url_abs_path or request.get_full_path()
            return HttpResponseClientRedirect(f"{reverse(LOGIN_URL)}?{urlencode({'next': current})}")
        return guarded(request, *args, **kwargs)

    return wrapper


def dashboard_page(view: Any) -> Any:
    """A page: a login, GET only, cached apart from the partial that htmx asks for."""
    return dashboard_login_required(require_GET(vary_on_headers("HX-Request")(view)))


def page_render(
    request: HtmxHttpRequest, template: str, context: dict[str, Any], status: int = 200
) -> HttpResponse:
    """``template`` ("page.html#partial") whole, or its partial alone for htmx."""
    return render(request, template if request.htmx else template.partition("#")[0], context, status=status)


def staff_can(request: HttpRequest, *permissions: str) -> bool:
    user = request.user
    return bool(user.is_authenticated and user.is_staff and all(user.has_perm(p) for p in permissions))


def staff_required(request: HttpRequest, *permissions: str, action: str) -> None:
    """The dashboard's writes: a staff login with these permissions, else a 403 saying which."""
    if not staff_can(request, *permissions):
        raise PermissionDenied(f"{action} needs a staff login with the change permission.")


class DashboardLoginView(LoginView):
    template_name = "ladder/login.html"
    redirect_authenticated_user = True
    authentication_form = ThrottledAuthenticationForm
    next_page = "ladder:overview"

    def form_invalid(self, form: Any) -> HttpResponse:
        response = super().form_invalid(form)
        throttled_answer(response, form)
        return response


class DashboardLogoutView(LogoutView):
    next_page = "ladder:login"


# --- overview ---------------------------------------------------------------------------------


@dashboard_page
def overview(request: HtmxHttpRequest) -> HttpResponse:
    context = {"overview": overview_build(now=timezone.now()), "poll_ms": poll_interval_ms()}
    return page_render(request, "ladder/overview.html#ladder", context)


# --- pool preview -----------------------------------------------------------------------------


@dashboard_page
def pool_preview(request: HtmxHttpRequest) -> HttpResponse:
    auto_id = (request.GET.get("model") or PREVIEW_DEFAULT).strip()
    preview = preview_build(auto_id=auto_id, now=timezone.now())
    return page_render(
        request, "ladder/pool_preview.html#pool", {"preview": preview}, 400 if preview.error else 200
    )


# --- escalation log ---------------------------------------------------------------------------


@dashboard_page
def escalations(request: HtmxHttpRequest) -> HttpResponse:
    """The escalation log as a timeline, newest first (what GET /api/v1/escalations lists)."""
    auto_id = (request.GET.get("model") or "").strip()
    timeline = timeline_build(now=timezone.now(), auto_id=auto_id)
    context = {"timeline": timeline, "poll_ms": poll_interval_ms()}
    return page_render(request, "ladder/escalations.html#timeline", context, 400 if timeline.error else 200)


# --- connection page --------------------------------------------------------------------------


@dashboard_page
def connection_detail(request: HtmxHttpRequest, connection_id: str) -> HttpResponse:
    """The connection page: its card, chart, credential, recent failures and usage."""
    return _connection_render(request, connection_id)


def _connection_render(request: HtmxHttpRequest, connection_id: str) -> HttpResponse:
    """The connection page, also after each of its writes; ``?range=`` one of 1h, 6h, 24h, 7d picks the
    chart's span (a bad one is a 400 naming the parameter, with the page on its automatic range)."""
    chart_range = request.GET.get("range")
    range_error = chart_range_error(chart_range)
    chart_range = None if range_error else chart_range
    page = connection_page_build(connection_id=connection_id, now=timezone.now(), chart_range=chart_range)
    if page is None:
        raise Http404("No such connection.")
    context = {
        "page": page,
        "can_refresh": request.user.has_perm(REFRESH_CONNECTION),
        "refresh_pending": refresh_is_pending(connection_id=connection_id),
        "poll_ms": poll_interval_ms(),
        "range_error": range_error,
    }
    return page_render(request, "ladder/connection.html#detail", context, 400 if range_error else 200)


ConnectionWrite = Callable[[HtmxHttpRequest, str], None]


def connection_write(action: str) -> Callable[[ConnectionWrite], Any]:
    """A write of the connection page: a login, POST only, staff with the change permission and a
    known connection. The write tells its outcome in messages; the answer is the page's detail for
    htmx, else the page."""

    def decorate(write: ConnectionWrite) -> Any:
        @wraps(write)
        def view(request: HtmxHttpRequest, connection_id: str) -> HttpResponseBase:
            staff_required(request, REFRESH_CONNECTION, action=action)
            if not connection_exists(connection_id=connection_id):
                raise Http404("No such connection.")
            try:
                write(request, connection_id)
            except ObjectDoesNotExist:
                raise Http404("No such connection.") from None  # deleted meanwhile
            if request.htmx:
                return _connection_render(request, connection_id)
            return redirect(reverse("ladder:connection_page", args=[connection_id]))

        return dashboard_login_required(require_POST(view))

    return decorate


@connection_write("Refreshing a connection")
def connection_refresh_now(request: HtmxHttpRequest, connection_id: str) -> None:
    """Queue a refresh for a worker and answer at once (polling upstream here held the request for up
    to 20 s); the page shows the refresh as pending until the worker has stored its outcome."""
    floor = connection_poll_floor(connection_id=connection_id, now=timezone.now())
    if floor is not None:
        allowed_at, interval_s = floor
        messages.info(
            request,
            f"Not polled yet: this connection is polled at most every {interval_s:g} s (its provider's "
            f"or its own minimum poll interval); the next poll may come at {allowed_at:%H:%M:%S} UTC.",
        )
    elif refresh_request(connection_ids=[connection_id]):
        messages.success(request, "Refresh requested: a worker polls this connection shortly.")
    elif refresh_is_pending(connection_id=connection_id):
        messages.info(request, "A refresh of this connection is already pending.")
    else:
        messages.warning(
            request, "The refresh could not be requested (Redis is unavailable); it is polled when due."
        )


@connection_write("Changing a connection's reserve")
def connection_reserve(request: HtmxHttpRequest, connection_id: str) -> None:
    """Set or clear the quota this connection keeps for the operator's own use (DESIGN L6 Reserve)."""
    text = request.POST.get("reserve_pct", "").strip().rstrip("%").strip()
    try:
        reserve = None if text == "" else float(text)
        connection_reserve_set(connection_id=connection_id, reserve_pct=reserve)
    except ValueError:
        messages.error(request, f"{RESERVE_MESSAGE}; got {text[:40]!r}.")
    except ValidationError as exc:
        messages.error(request, "; ".join(exc.messages))
    else:
        if reserve is None:
            messages.success(request, "No reserve: the gateway may use this plan down to the exit cutoff.")
        else:
            messages.success(request, f"Reserve set: {reserve:g} % of every window is kept for your own use.")


@connection_write("Setting a connection's credential")
def connection_credential(request: HtmxHttpRequest, connection_id: str) -> None:
    """Store a pasted CLI credential file (its owner chosen on the form). A bad file is named by its
    field and nothing is saved; the secret is never echoed back."""
    text = request.POST.get("credential_file", "").strip()
    owner = request.POST.get("credential_owner", "").strip() or None
    if not text:
        messages.error(request, "Paste the credential file first.")
        return
    try:
        connection = credential_import(connection_id=connection_id, text=text, owner=owner)
    except ValidationError as exc:
        for field_name, problems in _errors(exc).items():
            for problem in problems:
                messages.error(request, f"{field_name}: {problem}")
    else:
        messages.success(
            request, f"Credential stored (owner {connection.credential_owner}); it is polled shortly."
        )


# --- catalog curation -------------------------------------------------------------------------


def _form_values(request: HttpRequest) -> dict[str, str]:
    return {name: request.POST.get(name, "") for name in EDITABLE_FIELDS}


def _errors(exc: ValidationError) -> dict[str, list[str]]:
    """Each field's messages; those of no field (or of a bare error) under "form"."""
    errors = exc.message_dict if hasattr(exc, "error_dict") else {NON_FIELD_ERRORS: exc.messages}
    return {("form" if name == NON_FIELD_ERRORS else name): problems for name, problems in errors.items()}


def _catalog_context(request: HttpRequest, **extra: Any) -> dict[str, Any]:
    return {
        "billings": BILLINGS,
        "overages": OVERAGES,
        "can_edit": staff_can(request, CHANGE_CATALOG),
        "history": catalog_changes(),
        **extra,
    }


@dashboard_login_required
@require_GET
def catalog(request: HtmxHttpRequest) -> HttpResponse:
    page = catalog_page_build(now=timezone.now())
    return render(request, "ladder/catalog.html", _catalog_context(request, page=page))


@dashboard_login_required
@require_http_methods(["GET", "POST"])
def catalog_entry_edit(request: HtmxHttpRequest, entry_id: int) -> HttpResponse:
    staff_required(request, CHANGE_CATALOG, action="Editing the billing catalog")
    entry = catalog_row(entry_id=entry_id)
    if entry is None:
        raise Http404("No such catalog row.")
    if request.method == "GET":  # the row in its form, or shown again when the edit is cancelled
        values = {name: getattr(entry, name) or "" for name in EDITABLE_FIELDS}
        return _entry_response(request, entry, editing=not request.GET.get("cancel"), values=values)
    values = _form_values(request)
    try:
        updated, changes = catalog_entry_update(
            entry_id=entry_id, values=values, user=request.user, now=timezone.now()
        )
    except ValidationError as exc:
        return _entry_response(request, entry, editing=True, values=values, errors=_errors(exc), status=422)
    return _entry_saved(request, catalog_row_of(updated), len(changes), f"{len(changes)} field(s) changed.")


def _entry_saved(request: HtmxHttpRequest, entry: CatalogRow, changed: int, done: str) -> HttpResponse:
    """After a catalog write: the row in place for htmx, else the catalog at the row, saying ``done``."""
    if request.htmx:
        return _entry_response(request, entry, editing=False, saved=changed)
    messages.success(request, f"{entry}: {done}")
    return redirect(f"{reverse('ladder:catalog')}#entry-{entry.id}")


def _entry_response(
    request: HtmxHttpRequest, entry: CatalogRow, status: int = 200, **shown: Any
) -> HttpResponse:
    """One catalog row, shown or (``editing``) in its form with its ``values`` and ``errors``;
    ``saved``: the number of fields just changed, and the history is sent along."""
    context = _catalog_context(request, entry=entry, history_oob=shown.get("saved") is not None, **shown)
    template = "ladder/catalog.html#entry" if request.htmx else "ladder/catalog_edit.html"
    return render(request, template, context, status=status)


@dashboard_login_required
@require_POST
def catalog_entry_new(request: HtmxHttpRequest) -> HttpResponse:
    staff_required(request, CHANGE_CATALOG, ADD_CATALOG, action="Editing the billing catalog")
    provider = request.POST.get("provider", "").strip()
    auth_type = request.POST.get("auth_type", "").strip() or None
    values = _form_values(request)
    try:
        created, changes = catalog_entry_create(
            provider=provider, auth_type=auth_type, values=values, user=request.user, now=timezone.now()
        )
    except ValidationError as exc:
        kind = UncuratedKind(provider, auth_type)
        context = _catalog_context(request, kind=kind, values=values, errors=_errors(exc), creating=True)
        template = "ladder/catalog.html#new" if request.htmx else "ladder/catalog_edit.html"
        return render(request, template, context, status=422)
    return _entry_saved(request, catalog_row_of(created), len(changes), "curated.")


# --- alerts -----------------------------------------------------------------------------------


def _alerts_render(request: HtmxHttpRequest, http_status: int = 200, **rule_form: Any) -> HttpResponse:
    """The alerts page; ``?page=`` and ``?status=`` pick the history's page and the deliveries shown
    (a bad one is a 400 naming it). ``rule_form``: the refused rule's error_rule_id, rule_errors and
    rule_values."""
    query = request.GET
    alerts = alerts_page_build(
        now=timezone.now(), page=query.get("page", "1"), status=query.get("status", "")
    )
    context = {
        "alerts": alerts,
        "can_test": staff_can(request, TEST_CHANNEL),
        "can_edit_rules": staff_can(request, CHANGE_RULE),
        "poll_ms": poll_interval_ms(),
        **rule_form,
    }
    return page_render(request, "ladder/alerts.html#live", context, 400 if alerts.error else http_status)


@dashboard_page
def alerts(request: HtmxHttpRequest) -> HttpResponse:
    """Open alert episodes, their history, the deliveries (failed ones shown with their error), the
    channels with a "send a test" button and the rules."""
    return _alerts_render(request)


@dashboard_login_required
@require_POST
def alert_channel_test(request: HtmxHttpRequest, channel_id: int) -> HttpResponseBase:
    """Queue a test notification to one channel (its delivery shows below as it is sent or fails)."""
    staff_required(request, TEST_CHANNEL, action="Sending a test to a channel")
    try:
        delivery = enqueue_test_to(channel_id=channel_id, now=timezone.now())
    except ObjectDoesNotExist:
        raise Http404("No such alert channel.") from None
    messages.success(request, f"Test queued to {delivery.channel.name}: delivery {delivery.delivery_id}.")
    return redirect(f"{reverse('ladder:alerts')}#deliveries")


@dashboard_login_required
@require_POST
def alert_rule_edit(request: HtmxHttpRequest, rule_id: int) -> HttpResponseBase:
    """Turn a rule on or off and set its threshold and quiet period; a bad value is named by its field
    and nothing is saved."""
    staff_required(request, CHANGE_RULE, action="Editing alert rules")
    enabled = request.POST.get("enabled") in ("on", "true", "1")
    threshold = request.POST.get("threshold", "")
    quiet_period_s = request.POST.get("quiet_period_s", "")
    values = {"enabled": enabled, "threshold": threshold, "quiet_period_s": quiet_period_s}
    try:
        rule = alert_rule_update(
            rule_id=rule_id, enabled=enabled, threshold=threshold, quiet_period_s=quiet_period_s
        )
    except ObjectDoesNotExist:
        raise Http404("No such alert rule.") from None
    except ValidationError as exc:
        return _alerts_render(
            request, 422, error_rule_id=rule_id, rule_errors=_errors(exc), rule_values=values
        )
    messages.success(request, f"Rule {rule.name} saved{'' if rule.enabled else ' (off)'}.")
    return redirect(f"{reverse('ladder:alerts')}#rule-{rule.pk}")
