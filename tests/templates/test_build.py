"""`agent-sandbox template build|ls|rm` with the real binary, mmdebstrap and Debian's mirror
(ADR 0012). Needs root.

Two CTest entries run this file:
  template_failed_build  (label privileged, in CI): a build whose mirror cannot be reached
      fails, retries once, and leaves the installed template exactly as it was; `template rm`
      refuses a template a sandbox uses and removes one none does.  ~10 s, no network.
  templates_bundled      (label templates, NOT in CI's default run; `ctest -L templates`):
      every bundled template (base, python, node, go) builds into the data directory and passes
      its smoke test, a second build is a no-op, and a template whose smoke test fails is not
      installed over the previous one.  Minutes, and Debian's mirror.

Environment: ASB_BIN (agent-sandbox; sandboxd beside it), AGENT_SANDBOX_DATA_DIR (where the
bundled templates are built; default /var/lib/agent-sandbox), ASB_TEMPLATES_SUITE=bundled to
run the second group (the first runs otherwise).
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

BIN = os.environ.get("ASB_BIN", "agent-sandbox")
DATA = os.environ.get("AGENT_SANDBOX_DATA_DIR") or "/var/lib/agent-sandbox"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUITE = os.environ.get("ASB_TEMPLATES_SUITE", "failed_build")


def run(*args, check=True, timeout=3600, env=None):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([BIN] + list(args), capture_output=True, text=True, timeout=timeout,
                       env=e)
    if check and p.returncode != 0:
        raise AssertionError("%s -> %d\nstdout:\n%s\nstderr:\n%s"
                             % (" ".join(args), p.returncode, p.stdout, p.stderr))
    return p


def tree_digest(path):
    """Names, sizes and link targets below path (not following symlinks)."""
    h = hashlib.sha256()
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for n in sorted(dirs + files):
            p = os.path.join(root, n)
            st = os.lstat(p)
            h.update(("%s %d %o" % (os.path.relpath(p, path), st.st_size, st.st_mode)).encode())
            if os.path.islink(p):
                h.update(os.readlink(p).encode())
    return h.hexdigest()


def missing():
    if os.geteuid() != 0:
        return "needs root (mmdebstrap --mode=root, sandboxes)"
    if not os.access(BIN, os.X_OK):
        return "agent-sandbox not found at %s" % BIN
    if shutil.which("mmdebstrap") is None:
        return "mmdebstrap is not installed"
    return None


class FailedBuildTest(unittest.TestCase):
    """A scratch data dir whose `base` is the real base template's rootfs (a symlink) with a
    manifest and stamp of its own; nothing here touches the real data directory."""

    def setUp(self):
        real = os.path.join(DATA, "templates", "base", "rootfs")
        if not os.path.isdir(os.path.join(real, "usr")):
            self.skipTest("no base template at %s" % real)
        self.data = tempfile.mkdtemp(prefix="asb-tmpl-test-", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, self.data, ignore_errors=True)
        t = os.path.join(self.data, "templates", "base")
        os.makedirs(t)
        os.symlink(os.path.realpath(real), os.path.join(t, "rootfs"))
        with open(os.path.join(t, "manifest.json"), "w") as f:
            json.dump({"name": "base", "display_name": "old base", "recipe_hash": "old"}, f)
        with open(os.path.join(t, ".stamp"), "w") as f:
            f.write("old\n")
        self.tdir = os.path.join(self.data, "templates")

    def test_unreachable_mirror_keeps_the_installed_template(self):
        before = tree_digest(self.tdir + "/base")
        manifest = open(self.tdir + "/base/manifest.json").read()
        started = time.time()
        p = run("template", "build", "--data-dir", self.data,
                "--mirror", "http://127.0.0.1:9/debian",
                "--security-mirror", "http://127.0.0.1:9/debian-security", "base", check=False,
                timeout=600)
        took = time.time() - started
        self.assertEqual(p.returncode, 1, p)
        self.assertIn("mmdebstrap failed", p.stderr)
        self.assertIn("the installed template is kept", p.stderr)
        self.assertIn("retrying once", p.stdout)  # one retry, then the error
        self.assertLess(took, 300)
        self.assertEqual(tree_digest(self.tdir + "/base"), before)
        self.assertEqual(open(self.tdir + "/base/manifest.json").read(), manifest)
        self.assertEqual(open(self.tdir + "/base/.stamp").read(), "old\n")
        leftovers = [n for n in os.listdir(self.tdir)
                     if n.startswith(".build-base.") and os.path.isdir(os.path.join(self.tdir, n))]
        self.assertEqual(leftovers, [])
        # `template ls` still shows it, now as stale against the repository's recipe.
        ls = run("template", "ls", "--data-dir", self.data, "--json")
        rows = {r["name"]: r for r in json.loads(ls.stdout)}
        self.assertEqual(rows["base"]["status"], "stale")
        self.assertEqual(rows["base"]["display_name"], "old base")
        self.assertEqual(rows["python"]["status"], "not built")

    def test_bad_spec_and_name_errors(self):
        d = tempfile.mkdtemp(prefix="asb-spec-", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        os.makedirs(d + "/bad")
        with open(d + "/bad/template.toml", "w") as f:
            f.write('name = "bad"\nsmoke_test = "true"\npackages = ["ok", "Not Valid"]\n')
        p = run("template", "build", "--data-dir", self.data, d + "/bad", check=False)
        self.assertEqual(p.returncode, 125, p)
        self.assertIn("'Not Valid' is not a Debian package name", p.stderr)
        p = run("template", "build", "--data-dir", self.data, "nope", check=False)
        self.assertEqual(p.returncode, 125, p)
        self.assertIn("available: base, go, node, python", p.stderr)

    def test_rm_refuses_a_template_in_use(self):
        # A live sandbox in the server's database uses `base`: refused.
        import socket
        import sqlite3
        db = os.path.join(self.data, "agent-sandbox.db")
        # Let the server create its database (schema and all), then stop it.
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        e = dict(os.environ, AGENT_SANDBOX_DATA_DIR=self.data, AGENT_SANDBOX_HOST="127.0.0.1",
                 AGENT_SANDBOX_PORT=str(port), AGENT_SANDBOX_INSECURE_NO_AUTH="true")
        srv = subprocess.Popen([BIN, "serve"], env=e, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        try:
            deadline = time.time() + 30
            while time.time() < deadline:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.1)
        finally:
            srv.terminate()
            srv.wait(timeout=60)
        if not os.path.exists(db):
            self.skipTest("the server made no database in the scratch data dir")
        con = sqlite3.connect(db)
        cols = [r[1] for r in con.execute("PRAGMA table_info(sandboxes)")]
        row = {"id": "sb_00000000000000aa", "owner": "", "template": "base", "spec_json": "{}",
               "state": "running", "created_at": 1, "updated_at": 1, "expires_at": 2 ** 40,
               "last_activity_at": 1, "backend": "ns"}
        self.assertLessEqual(set(row), set(cols))
        con.execute("INSERT INTO sandboxes (%s) VALUES (%s)"
                    % (",".join(row), ",".join("?" * len(row))), list(row.values()))
        con.commit()
        p = run("template", "rm", "--data-dir", self.data, "base", check=False)
        self.assertEqual(p.returncode, 1, p)
        self.assertIn("in use by sandbox(es) sb_00000000000000aa", p.stderr)
        self.assertTrue(os.path.isdir(self.tdir + "/base"))
        con.execute("UPDATE sandboxes SET state = 'destroyed'")
        con.commit()
        con.close()
        run("template", "rm", "--data-dir", self.data, "base")
        self.assertFalse(os.path.exists(self.tdir + "/base"))
        # The real template behind the symlink is untouched.
        self.assertTrue(os.path.isdir(os.path.join(DATA, "templates", "base", "rootfs", "usr")))
        p = run("template", "rm", "--data-dir", self.data, "base", check=False)
        self.assertEqual(p.returncode, 1, p)
        self.assertIn("not installed", p.stderr)


class BundledTemplatesTest(unittest.TestCase):
    """Builds every bundled template into the real data directory (atomically: sandboxes that
    run meanwhile keep their version) and records the build times."""

    times = {}

    @classmethod
    def tearDownClass(cls):
        print("\nbuild times (s): " + json.dumps(cls.times), file=sys.stderr)

    def build(self, name):
        started = time.time()
        p = run("template", "build", name, timeout=3600)
        self.times[name] = round(time.time() - started, 1)
        print(p.stdout, file=sys.stderr)
        self.assertTrue("smoke test passed" in p.stdout or "up to date" in p.stdout, p.stdout)
        return p

    def check(self, name, command, want):
        p = run("run", "-T", name, "--", "sh", "-c", command, timeout=600)
        self.assertIn(want, p.stdout)
        m = json.load(open(os.path.join(DATA, "templates", name, "manifest.json")))
        self.assertEqual(m["name"], name)
        self.assertEqual(m["source"], "toml")
        self.assertTrue(m["created_at"])
        again = time.time()
        p = run("template", "build", name)
        self.assertIn("up to date", p.stdout)
        self.assertLess(time.time() - again, 30)

    def test_1_base(self):
        self.build("base")
        self.check("base", "python3 -c 'print(6*7)'", "42")

    def test_2_python(self):
        self.build("python")
        self.check("python", "python3 -c 'import numpy, pandas, matplotlib; print(numpy.ones(3).sum())'",
                   "3.0")

    def test_3_node(self):
        self.build("node")
        self.check("node", "node -e 'console.log(6*7)'", "42")

    def test_4_go(self):
        self.build("go")
        self.check("go", "mkdir -p /workspace/h && cd /workspace/h && "
                   "printf 'package main\\nimport \"fmt\"\\nfunc main(){fmt.Println(6*7)}\\n' "
                   "> m.go && go run m.go", "42")

    def test_5_failed_smoke_test_keeps_the_previous_version(self):
        d = tempfile.mkdtemp(prefix="asb-spec-", dir="/var/tmp")
        data = tempfile.mkdtemp(prefix="asb-tmpl-data-", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        self.addCleanup(shutil.rmtree, data, ignore_errors=True)
        os.makedirs(d + "/tiny")
        spec = 'name = "tiny"\nversion = "%s"\npackages = []\nsmoke_test = "%s"\n'
        with open(d + "/tiny/template.toml", "w") as f:
            f.write(spec % ("1", "test -x /bin/sh"))
        started = time.time()
        run("template", "build", "--data-dir", data, d + "/tiny")
        self.times["tiny (minbase)"] = round(time.time() - started, 1)
        stamp = open(data + "/templates/tiny/.stamp").read()
        with open(d + "/tiny/template.toml", "w") as f:
            f.write(spec % ("2", "echo broken >&2; exit 3"))
        p = run("template", "build", "--data-dir", data, d + "/tiny", check=False)
        self.assertEqual(p.returncode, 1, p)
        self.assertIn("smoke test failed with exit code 3", p.stderr)
        self.assertIn("broken", p.stderr)
        self.assertEqual(open(data + "/templates/tiny/.stamp").read(), stamp)
        m = json.load(open(data + "/templates/tiny/manifest.json"))
        self.assertEqual(m["version"], "1")
        self.assertEqual([n for n in os.listdir(data + "/templates")
                          if n.startswith(".build") and os.path.isdir(data + "/templates/" + n)],
                         [])


if __name__ == "__main__":
    reason = missing()
    if reason:
        print("SKIP: " + reason)
        sys.exit(77)
    cls = BundledTemplatesTest if SUITE == "bundled" else FailedBuildTest
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(cls)
    ok = unittest.TextTestRunner(verbosity=2).run(suite).wasSuccessful()
    sys.exit(0 if ok else 1)
