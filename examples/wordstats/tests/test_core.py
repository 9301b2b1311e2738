import unittest

from wordstats.core import sentences, summarize, tokenize, top_words


class TokenizeTest(unittest.TestCase):
    def test_words_are_lowercased_letters(self):
        self.assertEqual(tokenize("The cat's 3 hats, THE end."), ["the", "cat's", "hats", "the", "end"])

    def test_unicode_letters_and_curly_apostrophes(self):
        self.assertEqual(tokenize("Über naïve café — it’s fine"),
                         ["über", "naïve", "café", "it's", "fine"])

    def test_empty(self):
        self.assertEqual(tokenize(""), [])
        self.assertEqual(sentences("  "), 0)


class CountTest(unittest.TestCase):
    def test_top_words_breaks_ties_alphabetically(self):
        words = tokenize("b a c b a d")
        self.assertEqual(top_words(words, 3), [("a", 2), ("b", 2), ("c", 1)])

    def test_stopwords_are_skipped(self):
        words = tokenize("the cat and the hat")
        self.assertEqual(top_words(words, 2, frozenset({"the", "and"})), [("cat", 1), ("hat", 1)])

    def test_sentences(self):
        self.assertEqual(sentences("One. Two! Three?"), 3)
        self.assertEqual(sentences("no punctuation at all"), 1)
        self.assertEqual(sentences("Version 3.11 is out."), 1)

    def test_summary(self):
        s = summarize("The quick brown fox. The lazy dog!", n=1)
        self.assertEqual(s.words, 7)
        self.assertEqual(s.unique_words, 6)
        self.assertEqual(s.sentences, 2)
        self.assertEqual(s.top, [("the", 2)])
        self.assertEqual(set(s.as_dict()), {"words", "unique_words", "sentences", "top",
                                            "reading_ease"})


if __name__ == "__main__":
    unittest.main()
