"""Tokenizing and counting."""

import collections
import dataclasses
import re

_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*", re.UNICODE)
_SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)")


def tokenize(text):
    """Lower-cased words of `text` (letters and inner apostrophes; digits are not words)."""
    return [m.group(0).lower().replace("’", "'") for m in _WORD.finditer(text)]


def sentences(text):
    """Number of sentences: runs of . ! ? followed by space or the end; at least 1 for any
    text that has words."""
    n = len(_SENTENCE_END.findall(text))
    return max(n, 1) if tokenize(text) else 0


def top_words(words, n=5, stopwords=frozenset()):
    """The n most common words, most common first, ties broken alphabetically."""
    counts = collections.Counter(w for w in words if w not in stopwords)
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


@dataclasses.dataclass(frozen=True)
class Summary:
    words: int
    unique_words: int
    sentences: int
    top: list
    reading_ease: float

    def as_dict(self):
        return dataclasses.asdict(self)


def summarize(text, n=5, stopwords=frozenset()):
    from wordstats.readability import flesch_reading_ease
    words = tokenize(text)
    return Summary(
        words=len(words),
        unique_words=len(set(words)),
        sentences=sentences(text),
        top=top_words(words, n, stopwords),
        reading_ease=round(flesch_reading_ease(text), 1),
    )
