"""wordstats: word counts and simple readability figures for plain text."""

from wordstats.core import Summary, summarize, tokenize, top_words
from wordstats.readability import flesch_reading_ease, syllables

__all__ = ["Summary", "summarize", "tokenize", "top_words", "flesch_reading_ease", "syllables"]
