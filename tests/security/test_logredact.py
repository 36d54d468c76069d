from __future__ import annotations

import time

import pytest

from ladder.security.logredact import REDACTED, SECRET_FRAGMENT_MIN, redact_url, strip_secrets

KEY = "sk-proj-Z9y8X7w6V5u4T3s2R1q0ABCDEFGHIJ"


def test_it_strips_the_whole_credential() -> None:
    assert (
        strip_secrets(f"Incorrect API key provided: {KEY}.", [KEY])
        == f"Incorrect API key provided: {REDACTED}."
    )


@pytest.mark.parametrize("fragment", [KEY[-12:], KEY[:12], KEY[5:30]])
def test_it_strips_any_stretch_of_twelve_or_more_characters_of_it(fragment: str) -> None:
    assert strip_secrets(f"key ...{fragment} refused", [KEY]) == f"key ...{REDACTED} refused"


def test_it_keeps_a_stretch_shorter_than_twelve_characters() -> None:
    text = f"key ...{KEY[-(SECRET_FRAGMENT_MIN - 1) :]} refused"
    assert strip_secrets(text, [KEY]) == text


def test_it_merges_overlapping_and_touching_stretches_into_one() -> None:
    assert strip_secrets(f"<{KEY}{KEY[:14]}> and <{KEY[-13:]}>", [KEY]) == f"<{REDACTED}> and <{REDACTED}>"


def test_it_strips_every_secret_given_and_ignores_empty_ones() -> None:
    other = "rt-0123456789abcdefghij"
    text = f"access {KEY} refresh {other}"
    assert strip_secrets(text, [None, "", KEY, other]) == f"access {REDACTED} refresh {REDACTED}"


def test_it_strips_a_short_credential_only_whole() -> None:
    assert strip_secrets("pin abc123 and abc12", ["abc123"]) == f"pin {REDACTED} and abc12"


def test_it_leaves_text_alone_without_a_secret() -> None:
    assert strip_secrets("HTTP 401", []) == "HTTP 401"
    assert strip_secrets("", [KEY]) == ""


def test_it_is_linear_for_long_credentials_and_long_texts() -> None:
    secret = "".join(chr(0x41 + (i * 7919) % 58) for i in range(8_000))  # an 8 kB token file
    text = ("x" * 999 + secret[3000:3020]) * 200  # 200 kB of text quoting 20 characters of it 200 times

    started = time.perf_counter()
    stripped = strip_secrets(text, [secret])
    elapsed_s = time.perf_counter() - started

    assert stripped.count(REDACTED) == 200
    assert elapsed_s < 1.0  # ~0.1 s here; a cubic search would take hours


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://hooks.slack.com/services/T0/B0/secret-token", "https://hooks.slack.com/…"),
        ("http://127.0.0.1:8080/hook?key=secret", "http://127.0.0.1:8080/…"),
        ("http://[::1", "(invalid URL)"),
    ],
)
def test_it_shows_only_a_urls_scheme_host_and_port(url: str, shown: str) -> None:
    assert redact_url(url) == shown
