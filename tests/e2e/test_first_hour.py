#!/usr/bin/env python3
"""The first hour of a new user: the examples of README.md, sdk/python/README.md and
sdk/typescript/README.md run exactly as written, taken from the Markdown when the test runs, so
the documents cannot drift from the product.

Every fenced block carries a marker (readme_blocks.py): run, or skip with a reason; a block
with neither fails the test. Each README is followed in one bash session (`set -eo pipefail`),
as a user types it into one terminal: variables, the working directory within a block, and
background jobs carry from one block to the next. The session's root is a fresh directory
holding `agent-sandbox` (a copy of this repository, the user's clone: nothing is written to the
source tree) and the projects the blocks name with cwd= (default `myproject`). Blocks run as:

  shell       sourced into the session (offline: `unshare --net bash` of the block, no network)
  python      the block as a file, run by the project's `.venv/bin/python`, which the README's
              own install block must have made (from the built wheel)
  javascript  the block as exampleN.mjs in the project, `node exampleN.mjs` (the SDK installed
              by the README's own `npm install` of the built .tgz)
  typescript  marked `run save=FILE`: written to FILE in the project, for a later shell block
              (the README's own tsc command) to compile and run

The environment is a fresh login's (no PYTHONPATH, no virtualenv, Debian's python3 first) with
PATH leading to the built agent-sandbox, and what the README tells users to set
(ASB_FIRST_HOUR_VERBOSE=1 prints each session's whole output):
- README.md's session runs in a network namespace of its own (loopback, and a veth as the
  default route to nowhere, so networked sandboxes can be made), so its server listens on
  127.0.0.1:8080 exactly as the README says; AGENT_SANDBOX_DATA_DIR (documented) is a temporary
  data directory whose templates are the real ones. The suite runs as root, where a user types
  `sudo`: a `sudo` on PATH runs its command as is (real sudo would reset PATH and the data dir).
- The SDK READMEs' sessions get AGENT_SANDBOX_URL and AGENT_SANDBOX_API_KEY (their "Configure"
  sections) for a real server started as tests/e2e/harness.py does.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import harness
import readme_blocks

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
READMES = ("README.md", "sdk/python/README.md", "sdk/typescript/README.md")
CLONE = "agent-sandbox"  # the clone's directory in a session's root
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SESSION_TIMEOUT = 600
MARK = "@@first-hour block %d@@"
# Not copied into the clone: build outputs and installs of the source tree (directories).
SKIP_DIRS = re.compile(
    r"^(\.git|build|build-.*|node_modules|dist|\.venv|__pycache__|.*\.egg-info)$")

# The environment a session keeps from ours: a fresh login's, plus how to reach npm's registry.
KEEP_ENV = re.compile(r"^(HOME|USER|LOGNAME|TMPDIR|LANG|(?i:https?_proxy|no_proxy)|npm_config_.*)$")

# What the session script does around the blocks: stop on the first failure; on exit, remove
# what the README's commands still hold (a server started with `&` and its sandboxes).
PROLOGUE = r"""set -eo pipefail
__fh_cleanup() {
  local rc=$? jobs_
  set +e
  trap - EXIT
  jobs_=$(jobs -p)
  if [[ -n $jobs_ ]]; then
    printf '\n@@first-hour cleanup@@\n'
    agent-sandbox ls --json 2>/dev/null | python3 -c '
import json, sys
for s in json.load(sys.stdin)["sandboxes"]: print(s["id"])' | while read -r s; do
      agent-sandbox rm "$s"
    done
    kill -TERM $jobs_
    wait
  fi
  exit "$rc"
}
__fh_need() {
  [[ -e $1 ]] || { printf 'first-hour: %s\n' "$2" >&2; exit 1; }
}
trap __fh_cleanup EXIT
"""
NEED_VENV = ("python blocks run with the project's .venv/bin/python, and no block before this "
             "one made it")
NEED_SDK = ("javascript blocks run in the project, and no block before this one installed "
            "@agent-sandbox/sdk there")
SUDO_SHIM = """#!/bin/sh
# first-hour: the suite runs as root; a README's `sudo CMD` runs CMD as is.
case "$1" in -*) echo "first-hour sudo: options are not supported: $*" >&2; exit 2;; esac
exec "$@"
"""
# README.md's session: loopback, and a default route over a veth pair that leads nowhere.
NETNS_SETUP = ("ip link set lo up && ip link add fhup0 type veth peer name fhup1 && "
               "ip link set fhup0 up && ip link set fhup1 up && "
               "ip addr add 198.18.0.1/30 dev fhup0 && "
               "ip route add default via 198.18.0.2 dev fhup0 && exec bash \"$0\"")


def copy_ignore(d, names):
    return [n for n in names if SKIP_DIRS.match(n) and os.path.isdir(os.path.join(d, n))]


def all_blocks():
    """{readme: [Block]} and the marker errors of all three READMEs."""
    out, errors = {}, []
    for name in READMES:
        blocks, errs = readme_blocks.parse(os.path.join(REPO, name))
        for b in blocks:
            b.path = name
        out[name] = blocks
        errors += [e.replace(REPO + "/", "") for e in errs]
    return out, errors


class Session:
    """One README followed in one bash session (module docstring); run() returns its result."""

    def __init__(self, readme, blocks, env, netns=False):
        self.readme = readme
        self.blocks = blocks
        self.netns = netns
        self.root = tempfile.mkdtemp(prefix="asb-first-hour-", dir="/var/tmp")
        self.meta = os.path.join(self.root, ".first-hour")
        os.makedirs(os.path.join(self.meta, "bin"))
        shutil.copytree(REPO, os.path.join(self.root, CLONE), symlinks=True, ignore=copy_ignore)
        shim = os.path.join(self.meta, "bin", "sudo")
        with open(shim, "w") as f:
            f.write(SUDO_SHIM)
        os.chmod(shim, 0o755)
        self.env = {k: v for k, v in os.environ.items() if KEEP_ENV.match(k)}
        self.env.update(LANG="C.UTF-8", TERM="dumb", PATH=self._path())
        self.env.update(env)
        self.ran, self.skipped = [], []

    def _path(self):
        dirs = [os.path.join(self.meta, "bin"), os.path.dirname(os.path.abspath(harness.BIN))]
        dirs += SYSTEM_PATH.split(":")
        for tool in ("node", "npm", "unshare", "ip"):  # wherever this machine keeps them
            found = shutil.which(tool)
            if found and os.path.dirname(found) not in dirs:
                dirs.append(os.path.dirname(found))
        return ":".join(dirs)

    def project(self, name):
        return os.path.join(self.root, name)

    def _step(self, i, block):
        """The script lines that run block i (its file is written beside the script)."""
        ext = {"shell": "sh", "python": "py", "javascript": "mjs", "typescript": "ts"}
        path = os.path.join(self.meta, "block%d.%s" % (i, ext[block.kind]))
        with open(path, "w") as f:
            f.write(block.text)
        cwd = self.project(block.cwd)
        lines = ["printf '\\n%s\\n'" % (MARK % i), "mkdir -p %s" % q(cwd), "cd %s" % q(cwd)]
        if block.save:
            lines.append("cp %s %s" % (q(path), q(block.save)))
        elif block.kind == "shell" and block.offline:
            lines.append("unshare --net -- bash -eo pipefail %s" % q(path))
        elif block.kind == "shell":
            lines.append(". %s" % q(path))
        elif block.kind == "python":
            lines += ["__fh_need .venv/bin/python %s" % q(NEED_VENV),
                      ".venv/bin/python %s" % q(path)]
        elif block.kind == "javascript":
            lines += ["__fh_need node_modules/@agent-sandbox/sdk %s" % q(NEED_SDK),
                      "cp %s example%d.mjs" % (q(path), i), "node example%d.mjs" % i]
        return "\n".join(lines) + "\n"

    def script(self):
        parts = [PROLOGUE]
        for i, block in enumerate(self.blocks):
            if block.action == "skip":
                self.skipped.append(block)
                continue
            self.ran.append(block)
            parts.append(self._step(i, block))
        path = os.path.join(self.meta, "session.sh")
        with open(path, "w") as f:
            f.write("".join(parts))
        return path

    def run(self):
        """(exit code, {block index: its output}, the whole output)."""
        script = self.script()
        argv = ["bash", script]
        if self.netns:
            argv = ["unshare", "--net", "--", "bash", "-c", NETNS_SETUP, script]
        p = subprocess.Popen(argv, cwd=self.root, env=self.env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             start_new_session=True)
        try:
            out, _ = p.communicate(timeout=SESSION_TIMEOUT)
        except subprocess.TimeoutExpired:
            # A hung block would hold up the script's trap: end the session's process group
            # (its server and sandboxd processes too; DataDir.close removes what they held).
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
            out += b"\n[first-hour: the session ran past %d s and was killed]\n" % (
                SESSION_TIMEOUT)
        text = out.decode(errors="replace")
        per_block, current = {}, None
        for line in text.split("\n"):
            m = re.match(r"^@@first-hour block (\d+)@@$", line)
            if m:
                current = int(m.group(1))
                per_block[current] = []
            elif line == "@@first-hour cleanup@@":
                current = None
            elif current is not None:
                per_block[current].append(line)
        return p.returncode, {k: "\n".join(v) for k, v in per_block.items()}, text

    def close(self):
        shutil.rmtree(self.root, ignore_errors=True)


class DataDir:
    """README.md's data directory (AGENT_SANDBOX_DATA_DIR, templates linked, as harness.Server
    makes it), and the removal of whatever its sandboxes left."""

    def __init__(self):
        self._server = harness.Server()  # never started: its directory and its cleanup
        self.path = self._server.data_dir
        self.cgroup = self._server.cgroup_name()

    def processes(self):
        """Pids of processes in the cgroup of this data directory's server (its sandboxes)."""
        pids = []
        for d in os.listdir("/proc"):
            try:
                with open("/proc/%s/cgroup" % d) as f:
                    if "/%s/" % self.cgroup in f.read():
                        pids.append(int(d))
            except (OSError, ValueError):
                continue
        return pids

    def close(self):
        for pid in self.processes():  # only after a failure: a clean session leaves none
            os.kill(pid, signal.SIGKILL)
        deadline = time.time() + 20
        while self.processes() and time.time() < deadline:
            time.sleep(0.1)
        roots = ["/sys/fs/cgroup"] + [os.path.join("/sys/fs/cgroup", d)
                                      for d in os.listdir("/sys/fs/cgroup")]
        for root in roots:
            top = os.path.join(root, self.cgroup)
            if os.path.islink(root) or not os.path.isdir(top):
                continue
            for d, _, _ in sorted(os.walk(top), key=lambda w: -len(w[0])):
                try:
                    os.rmdir(d)
                except OSError:
                    pass
        self._server._remove_data_dir()


def q(s):
    return "'" + s.replace("'", "'\\''") + "'"


class FirstHourTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.blocks, cls.errors = all_blocks()

    def test_every_block_is_run_or_skipped_with_a_reason(self):
        self.assertEqual(self.errors, [], "\n".join(self.errors))
        for name, blocks in self.blocks.items():
            self.assertTrue(any(b.action == "run" for b in blocks), name + " runs no block")

    def test_markers_are_enforced(self):
        """The checker itself: each kind of bad or missing marker is reported with its line."""
        text = "\n".join([
            "```sh", "echo unmarked", "```",
            "<!-- first-hour: skip () -->", "```sh", "echo no reason", "```",
            "<!-- first-hour: run -->", "```json", "{}", "```",
            "<!-- first-hour: run cwd=../up -->", "```sh", "true", "```",
            "<!-- first-hour: run -->", "```ts", "let x = 1;", "```",
            "<!-- first-hour: run offline expect=\"a b\" cwd=p -->", "  ```bash", "  echo",
            "  ```",
            "<!-- first-hour: skip (a reason) -->", "~~~", "free text", "~~~",
            "<!-- first-hour: run -->", "```python", "never closed"])
        blocks, errors = readme_blocks.parse("x.md", text)
        self.assertEqual([e.split(":")[1] for e in errors], ["1", "5", "9", "13", "17", "29"])
        ok = blocks[5]
        self.assertEqual((ok.kind, ok.offline, ok.expects, ok.cwd, ok.text),
                         ("shell", True, ["a b"], "p", "echo\n"))
        self.assertEqual((blocks[6].action, blocks[6].reason), ("skip", "a reason"))

    def follow(self, readme, env, netns=False):
        """Runs readme's blocks in a session; fails with the failing block's text and output."""
        self.assertEqual(self.errors, [], "\n".join(self.errors))
        s = Session(readme, self.blocks[readme], env, netns=netns)
        self.addCleanup(s.close)
        rc, outputs, text = s.run()
        if os.environ.get("ASB_FIRST_HOUR_VERBOSE") == "1":
            print(text, file=sys.stderr)
        failed = max(outputs) if outputs else None
        if rc != 0:
            b = self.blocks[readme][failed] if failed is not None else None
            self.fail("%s: exit %s in %s:\n--- block ---\n%s--- output ---\n%s" % (
                readme, rc, b.where() if b else "the session's start", b.text if b else "",
                outputs.get(failed, text)[-6000:]))
        for i, b in enumerate(self.blocks[readme]):
            for want in b.expects:
                self.assertIn(want, outputs.get(i, ""), "%s: output lacks %r:\n%s" % (
                    b.where(), want, outputs.get(i, "")))
            if b.save:
                later = [c for c in self.blocks[readme][i + 1:] if c.action == "run"]
                self.assertTrue(any(b.save in c.text for c in later),
                                "%s: no later block runs %s" % (b.where(), b.save))
        summary = "%s: %d blocks run, %d skipped" % (readme, len(s.ran), len(s.skipped))
        print("\n".join([summary] + ["  skipped %s: %s" % (b.where(), b.reason)
                                     for b in s.skipped]), file=sys.stderr)
        return s

    def assert_projects_import_the_sdk(self, s):
        """Each project a block set up imports the SDK from what it installed; myproject's came
        from the built packages when blocks ran against it."""
        for name in sorted(os.listdir(s.root)):
            d = s.project(name)
            if name in (CLONE, ".first-hour") or not os.path.isdir(d):
                continue
            venv = os.path.join(d, ".venv")
            if os.path.isdir(venv):
                p = subprocess.run([os.path.join(venv, "bin", "python"), "-c",
                                    "import agent_sandbox; print(agent_sandbox.__file__)"],
                                   cwd=d, env=s.env, capture_output=True, text=True)
                self.assertEqual(p.returncode, 0, name + ": " + p.stderr)
                self.assertTrue(p.stdout.startswith(venv + "/"), name + ": " + p.stdout)
            if os.path.isdir(os.path.join(d, "node_modules", "@agent-sandbox", "sdk")):
                p = subprocess.run(["node", "--input-type=module", "-e",
                                    "const m = await import('@agent-sandbox/sdk');"
                                    "console.log(typeof m.Sandbox)"],
                                   cwd=d, env=s.env, capture_output=True, text=True)
                self.assertEqual((p.returncode, p.stdout.strip()), (0, "function"),
                                 name + ": " + p.stderr)
        kinds = {b.kind for b in s.ran if b.cwd == "myproject"}
        mine = s.project("myproject")
        if "python" in kinds:
            found = [os.path.join(r, "direct_url.json") for r, _, files in os.walk(mine)
                     if r.endswith(".dist-info") and "agent_sandbox" in r
                     and "direct_url.json" in files]
            self.assertEqual(len(found), 1, "myproject: agent_sandbox's install record")
            with open(found[0]) as f:
                self.assertRegex(json.load(f)["url"], r"\.whl$", "not from the built wheel")
        if kinds & {"javascript", "typescript"}:
            sdk = os.path.join(mine, "node_modules", "@agent-sandbox", "sdk")
            self.assertFalse(os.path.islink(sdk), "myproject: the SDK is a link, not the .tgz")
            with open(os.path.join(mine, "package.json")) as f:
                spec = json.load(f)["dependencies"]["@agent-sandbox/sdk"]
            self.assertRegex(spec, r"^file:.*\.tgz$", "myproject: not from the built .tgz")

    def test_readme(self):
        data = DataDir()
        self.addCleanup(data.close)
        self.follow("README.md", {"AGENT_SANDBOX_DATA_DIR": data.path}, netns=True)
        self.assertEqual(data.processes(), [], "README.md's commands left sandboxes running")

    def sdk_server(self):
        key = "asb_" + os.urandom(24).hex()
        server = harness.Server({"AGENT_SANDBOX_API_KEYS": key}, api_key=key)
        self.addCleanup(server.close)
        server.start()
        env = {"AGENT_SANDBOX_URL": "http://127.0.0.1:%d" % server.port,
               "AGENT_SANDBOX_API_KEY": key}
        return server, env

    def follow_sdk(self, readme):
        server, env = self.sdk_server()
        s = self.follow(readme, env)
        self.assert_projects_import_the_sdk(s)
        left = server.request("GET", "/v1/sandboxes").json()["sandboxes"]
        self.assertEqual([x["id"] for x in left], [], readme + "'s examples left sandboxes")

    def test_python_sdk_readme(self):
        self.follow_sdk("sdk/python/README.md")

    def test_typescript_sdk_readme(self):
        self.follow_sdk("sdk/typescript/README.md")


if __name__ == "__main__":
    _, errors = all_blocks()
    if errors:  # a missing marker fails on any machine, root or not
        sys.exit("first-hour: README blocks without a valid marker:\n  " + "\n  ".join(errors))
    if shutil.which("node") is None or shutil.which("npm") is None:
        if os.environ.get("ASB_E2E_REQUIRE") != "1":
            print("SKIP: node and npm are needed (Debian: nodejs, npm)")
            sys.exit(77)
    harness.main()
