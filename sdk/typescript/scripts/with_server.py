"""Runs a command against a REAL agent-sandbox server, started and cleaned up the way
tests/e2e/harness.py does (free loopback port, temporary data directory, an API key).

Usage: python3 with_server.py -- CMD [ARGS...]
The command gets AGENT_SANDBOX_URL and AGENT_SANDBOX_API_KEY; its exit code is ours.
Exits 77 (CTest skip) when the machine cannot run sandboxes (see harness.missing_prerequisite;
ASB_E2E_REQUIRE=1 makes that a failure). `with_server.py --check` only does that check.
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))

import harness  # noqa: E402


def main(argv):
    reason = harness.missing_prerequisite()
    if reason:
        print("SKIP: " + reason, file=sys.stderr)
        return 1 if os.environ.get("ASB_E2E_REQUIRE") == "1" else 77
    if argv[:1] == ["--check"]:
        return 0
    if argv[:1] != ["--"] or len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    key = "asb_" + os.urandom(24).hex()
    server = harness.Server({"AGENT_SANDBOX_API_KEYS": key}, api_key=key)
    try:
        server.start()
        env = dict(os.environ, AGENT_SANDBOX_URL="http://127.0.0.1:%d" % server.port,
                   AGENT_SANDBOX_API_KEY=key)
        return subprocess.call(argv[1:], env=env)
    finally:
        server.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
