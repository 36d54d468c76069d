"""A Content-Security-Policy on every response: only the site's own scripts, styles and images run.

The dashboard needs nothing else: htmx is vendored under static/, its config (a <meta> tag) turns
off eval and the indicator <style> it would inject, and page behaviour lives in static/ladder.js.
The Django admin's templates load their scripts and data from files and data attributes too. So no
'unsafe-inline', no 'unsafe-eval', no nonce: an injected <script> or style="" simply does not run.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponseBase

HEADER = "Content-Security-Policy"
DIRECTIVES = (
    ("default-src", "'self'"),
    ("script-src", "'self'"),
    ("style-src", "'self'"),
    ("img-src", "'self'"),
    ("font-src", "'self'"),
    ("connect-src", "'self'"),
    ("object-src", "'none'"),
    ("base-uri", "'none'"),
    ("frame-ancestors", "'none'"),
    ("form-action", "'self'"),
)
POLICY = "; ".join(f"{name} {value}" for name, value in DIRECTIVES)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if HEADER not in response:  # a view that needs a stricter policy may set its own
            response[HEADER] = POLICY
        return response
