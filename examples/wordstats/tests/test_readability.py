import unittest

from wordstats.readability import flesch_reading_ease, syllables


class SyllableTest(unittest.TestCase):
    def test_examples(self):
        for word, n in [("cat", 1), ("table", 2), ("make", 1), ("readability", 5),
                        ("sandbox", 2), ("free", 1), ("rhythm", 1)]:
            with self.subTest(word=word):
                self.assertEqual(syllables(word), n)


class FleschTest(unittest.TestCase):
    def test_simple_text_is_easy(self):
        self.assertGreater(flesch_reading_ease("The cat sat. The dog ran."), 90)

    def test_dense_text_is_hard(self):
        text = ("Institutional interoperability necessitates comprehensive organizational "
                "standardization initiatives.")
        self.assertLess(flesch_reading_ease(text), 0)

    def test_no_words(self):
        self.assertEqual(flesch_reading_ease("123 456"), 0.0)


if __name__ == "__main__":
    unittest.main()
