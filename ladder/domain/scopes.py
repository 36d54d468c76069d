"""A window's model scope as globs (DESIGN L4), and the same scope in the words its writer meant.

fnmatch has no negation, so a provider whose limit covers "every model except the ``:free`` ones"
(OpenRouter's key cap) writes it as a set of globs (``?``, ``*[!e]``, ``*[!e]?``, …). Those globs
are internal: ``scope_words`` gives them back as written, "every model except *:free", and any
other scope as its globs.
"""

from __future__ import annotations

import re

ALL_MODELS = "all models"
_DIFFERS = re.compile(r"^\*\[!(.)\](\?*)$")


def globs_not_ending_with(suffix: str) -> tuple[str, ...]:
    """Globs matching every id that does not end with ``suffix``: ids shorter than it, and ids whose
    k-th character from the end differs from the suffix's."""
    shorter = tuple("?" * length for length in range(1, len(suffix)))
    differs = tuple(f"*[!{char}]" + "?" * k for k, char in enumerate(reversed(suffix)))
    return shorter + differs


def excluded_suffix(scope_models: tuple[str, ...]) -> str | None:
    """The suffix when ``scope_models`` is exactly ``globs_not_ending_with(suffix)``, else None."""
    chars: dict[int, str] = {}
    for glob in scope_models:
        match = _DIFFERS.match(glob)
        if match:
            chars[len(match.group(2))] = match.group(1)
    if not chars or sorted(chars) != list(range(len(chars))):
        return None
    suffix = "".join(chars[k] for k in reversed(range(len(chars))))
    return suffix if tuple(scope_models) == globs_not_ending_with(suffix) else None


def scope_words(scope_models: tuple[str, ...]) -> str:
    """ "all models", "every model except *:free", or the globs as written ("*opus*")."""
    if not scope_models:
        return ALL_MODELS
    suffix = excluded_suffix(scope_models)
    if suffix is not None:
        return f"every model except *{suffix}"
    return ", ".join(scope_models)
