import io
import json
import os
import tempfile
import unittest
from contextlib import redirect_stdout

from wordstats.__main__ import main


class CliTest(unittest.TestCase):
    def test_json_summary_of_a_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.txt")
            with open(path, "w", encoding="utf-8") as f:
                f.write("Sandboxes isolate agents. Agents run code in sandboxes.")
            out = io.StringIO()
            with redirect_stdout(out):
                self.assertEqual(main([path, "-n", "2"]), 0)
            result = json.loads(out.getvalue())[path]
            self.assertEqual(result["words"], 8)
            self.assertEqual(result["top"], [["agents", 2], ["sandboxes", 2]])

    def test_runs_where_the_sandbox_put_it(self):
        # Inside the demo sandbox the project lives under /workspace/wordstats.
        self.assertTrue(os.path.isfile(os.path.join(os.path.dirname(__file__), "..",
                                                    "wordstats", "core.py")))


if __name__ == "__main__":
    unittest.main()
