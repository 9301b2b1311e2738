"""Readability: an estimate of syllables and the Flesch reading-ease score
(206.835 - 1.015 * words/sentences - 84.6 * syllables/words)."""

import re

from wordstats.core import sentences, tokenize

_VOWEL_GROUPS = re.compile(r"[aeiouy]+")


def syllables(word):
    """Vowel groups, minus a silent final 'e', at least one."""
    word = word.lower()
    n = len(_VOWEL_GROUPS.findall(word))
    if word.endswith("e") and not word.endswith(("le", "ee")) and n > 1:
        n -= 1
    return max(n, 1)


def flesch_reading_ease(text):
    words = tokenize(text)
    if not words:
        return 0.0
    s = sentences(text)
    syl = sum(syllables(w) for w in words)
    return 206.835 - 1.015 * (len(words) / s) - 84.6 * (syl / len(words))
