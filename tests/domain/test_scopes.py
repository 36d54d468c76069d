from __future__ import annotations

import pytest

from ladder.domain.scopes import excluded_suffix, globs_not_ending_with, scope_words
from ladder.domain.windows import scope_matches


@pytest.mark.parametrize(
    ("scope", "words"),
    [
        ((), "all models"),
        (globs_not_ending_with(":free"), "every model except *:free"),
        (globs_not_ending_with("-preview"), "every model except *-preview"),
        (("*opus*",), "*opus*"),
        (("gpt-5", "gpt-5-codex"), "gpt-5, gpt-5-codex"),
        # Almost the generated set: shown as written, never guessed.
        (globs_not_ending_with(":free")[1:], ", ".join(globs_not_ending_with(":free")[1:])),
        (("*[!e]?",), "*[!e]?"),
        (("*[!e]",), "every model except *e"),
    ],
)
def test_it_gives_a_scope_in_its_writers_words(scope: tuple[str, ...], words: str) -> None:
    assert scope_words(scope) == words


@pytest.mark.parametrize("suffix", [":free", "x", "-beta", "[!]"])
def test_it_recovers_the_excluded_suffix(suffix: str) -> None:
    assert excluded_suffix(globs_not_ending_with(suffix)) == suffix


@pytest.mark.parametrize(
    ("model", "matches"),
    [("openai/gpt-5", True), ("meta/llama:free", False), ("a", True), (":free", False), ("x:fre", True)],
)
def test_its_globs_match_every_model_without_the_suffix(model: str, matches: bool) -> None:
    assert scope_matches(globs_not_ending_with(":free"), model) is matches
