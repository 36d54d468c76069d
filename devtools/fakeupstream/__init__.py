"""A fake upstream that replays the quota fixtures over HTTP, with time moved to now.

A development tool, not product: no Django, nothing of the product imports it, and the wheel leaves
it out. ``python -m devtools.fakeupstream`` serves it in the foreground (``make run`` starts it so);
tests and benchmarks run it in a thread::

    with FakeUpstream() as upstream:                  # port 0: a free port
        client = httpx.Client(base_url=upstream.url_for("claude-oauth"))
        client.get("/api/oauth/usage")
        upstream.control().drain("claude-oauth", drain_s=60, reset_after_s=30)

URL scheme
----------

``/<kind>/<upstream path>``
    The fixture call of ``kind`` (the fixture's ``provider``) whose request has that path and
    method, e.g. ``GET /claude-oauth/api/oauth/usage``, ``POST /kiro/``,
    ``POST /gemini-cli/v1internal:retrieveUserQuota``. The upstream host of the fixture URL is
    dropped (so Copilot's token and user calls, or Antigravity's app-local call, all live under
    one base URL) and the query string is ignored. No two calls of one kind share a method and
    path (checked at load). Unknown path: 404 listing the kind's calls; known path, other
    method: 405. A connection's ``base_url`` is ``http://HOST:PORT/<kind>``.
``/<kind>/@<connection>/<upstream path>``
    The same, in the namespace of one connection: scenarios set for that connection apply only
    there; scenarios set for the kind apply to every namespace that has not set its own
    (precedence: connection, then kind, then global). Base URL ``http://HOST:PORT/<kind>/@<id>``.
``/``
    JSON index of kinds and their calls.
``/_control/...``
    The control API below.

Every served body and header has each absolute time shifted by ``now − fixture_time_utc``
(floored to whole seconds; see ``timeshift``): resets lie ahead of the server clock. Relative
durations are served as they are. ``Date`` follows the server clock. Each reply carries
``x-fake-upstream: <kind>/<call>`` (or ``…/error:<case>``) for debugging.

Control API (JSON in, JSON out)
-------------------------------

``GET /_control/state``
    ``now``, ``clock``, global ``delay_ms``, ``kinds`` (calls, error cases, variants, whether
    ``drain``/``set`` work), active ``scenarios``, ``counts`` (rows of kind, connection, call,
    count; connection ``null`` = the shared namespace, call ``null`` = an unknown path) and
    ``totals`` per kind.
``POST /_control/reset``
    ``{}``: back to the startup state (scenarios, counts, delay, clock). ``{"kind", "connection"?}``:
    clear that kind's (or connection's) scenarios and counts only.
``GET /_control/tokens``
    Every redemption at the kinds' token endpoints (``tokens``): kind, family, a digest of the
    token, outcome (``ok``, ``reused``, ``revoked``, ``unknown``), time; and a ``summary``.
``POST /_control/tokens``
    ``{"kind", "lifetime_s"?, "account_id"?, "auth_method"?}`` mints a login: its tokens and the
    ``file`` the kind's CLI would write. ``{"lifetime_s"}`` alone sets the default lifetime of the
    access tokens issued from then on (startup: ``token_lifetime_s``). Single-use refresh tokens
    (Claude, Codex, Kiro) rotate and a reuse revokes the family; an expired or revoked access token
    gets a 401 on the kind's calls.
``POST /_control/clock``
    ``{"now": ISO}`` freezes the clock there; ``{"advance_s": n}`` moves it (frozen or not);
    ``{"real": true}`` goes back to the real UTC clock.
``POST /_control/scenario``
    ``{"kind": K | null, "connection": C | null, "scenario": S, ...params}`` (a parameter the
    scenario does not take is refused, 400 naming it):

    ``static``
        clear the scope's scenarios: replay the fixture (shifted). With kind null: clear global ones.
    ``drain``  ``drain_s`` (required), ``reset_after_s`` = 0, ``start_pct`` = 100, ``end_pct`` = 0,
        ``started_at`` = now, ``exhausted_error`` = null
        remaining falls linearly from ``start_pct`` to ``end_pct`` over ``drain_s`` seconds of the
        server clock, stays there ``reset_after_s`` more, then resets to 100 % and the cycle
        repeats (from 100). Each window of the kind's responses is rewritten (``rewriters``) and
        its reset set to the end of the current cycle. When the remaining reaches 0 and
        ``exhausted_error`` names an error case, requests other than the kind's quota polls
        (inference/passive-header calls and unknown paths) get that error, with its reset fields
        and ``retry-after`` pointing at the cycle's end.
    ``set``  ``remaining_pct`` (required), ``reset_at`` = fixture's, ``exhausted_error`` = null
        pin the remaining percent (and reset).
    ``error``  ``case`` (required), ``times`` = null (until cleared), ``call`` = null (any request)
        serve the fixture's ``errors[case]`` (shifted) — or a generic ``http_<status>`` such as
        ``http_500`` — for the next ``times`` requests. A peer case (an answer another tool
        captured, ``data/quota-peers/<kind>/NN-slug.json``) is the case ``peer:NN-slug``,
        any status, shifted by now − its ``now_utc``: ``call`` = the usage call serves a poll case.
    ``slow``  ``delay_ms`` — delay every reply of the scope; kind null sets the global delay.
    ``malformed``  ``times``, ``call`` — status of the call, body cut in half (invalid JSON).
    ``oversized``  ``size_mb`` = 16, ``chunked`` = false, ``times``, ``call`` — a valid JSON
        body of that size, streamed (``Content-Length`` unless ``chunked``).
    ``reset_connection``  ``times``, ``call`` — close the socket without a response.
    ``variant``  ``variant`` (a ``variants_ok`` name, e.g. zai-glm ``credit_based_plan_2026``),
        ``call`` = the kind's first call — serve that 200 shape instead of the call's.

    Quota (``drain``/``set``), ``error``, the fault (``malformed``/``oversized``/
    ``reset_connection``), delay and variant are independent aspects of a scope; setting one keeps
    the others. Precedence per request: fault, then error, then exhaustion, then the call.
"""

from __future__ import annotations

from devtools.fakeupstream.app import URL_SCHEME, FakeUpstreamApp
from devtools.fakeupstream.client import FakeUpstreamControl, FakeUpstreamControlError, connection_base_url
from devtools.fakeupstream.fixtures import DEFAULT_FIXTURES_DIR, load_fixtures
from devtools.fakeupstream.runner import FakeUpstream
from devtools.fakeupstream.timeshift import shift_times

__all__ = [
    "DEFAULT_FIXTURES_DIR",
    "URL_SCHEME",
    "FakeUpstream",
    "FakeUpstreamApp",
    "FakeUpstreamControl",
    "FakeUpstreamControlError",
    "connection_base_url",
    "load_fixtures",
    "shift_times",
]
