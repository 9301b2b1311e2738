"""ADR 0012 end to end: `agent-sandbox template build --dockerfile` and `template import`
through the real binary, then sandboxes from the results through the real server.

Everything happens in a private data directory whose templates/ holds a symlink to the real
base template (read only: FROM copies it) and the templates these tests build; nothing is
written to the shared templates directory. The OCI archive is made here with tarfile from the
base template's dash and its libraries; nothing is downloaded.
"""

import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest

import harness
from harness import BIN, TEMPLATES, Server, main, wait_for_run_watchers


def mini_rootfs_tar():
    """A plain tar of dash + the libraries it needs, taken from the base template."""
    r = os.path.realpath(os.path.join(TEMPLATES, "base", "rootfs"))
    libs = subprocess.run("cd %s && ldd usr/bin/dash | grep -o '/[^ ]*'" % r, shell=True,
                          check=True, stdout=subprocess.PIPE, text=True).stdout.split()
    real = [subprocess.run(["chroot", r, "realpath", l], check=True, stdout=subprocess.PIPE,
                           text=True).stdout.strip().lstrip("/") for l in libs]
    names = ["usr", "usr/bin", "usr/lib", "usr/lib64"]
    names += sorted({os.path.dirname(p) for p in real} - set(names))
    names += ["bin", "lib", "lib64", "usr/bin/dash", "usr/bin/sh"] + real
    names += [l.lstrip("/") for l in libs]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for n in names:
            if os.path.lexists(os.path.join(r, n)):
                t.add(os.path.join(r, n), arcname=n, recursive=False)
    return buf.getvalue()


def layer(files):
    """A gzip'd tar layer from {name: bytes or None (a whiteout marker file)}."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data or b"")
            info.mode = 0o755 if name.endswith("tool") else 0o644
            t.addfile(info, io.BytesIO(data or b""))
    return buf.getvalue()


def oci_archive(path, layers, config):
    blobs = {}

    def blob(data):
        d = hashlib.sha256(data).hexdigest()
        blobs[d] = data
        return {"digest": "sha256:" + d, "size": len(data)}

    cfg = blob(json.dumps(config).encode())
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": dict(cfg, mediaType="application/vnd.oci.image.config.v1+json"),
                "layers": [dict(blob(l), mediaType="application/vnd.oci.image.layer.v1.tar+gzip")
                           for l in layers]}
    m = blob(json.dumps(manifest).encode())
    index = {"schemaVersion": 2, "manifests": [dict(m, mediaType=manifest["mediaType"],
                                                    annotations={
                                                        "org.opencontainers.image.ref.name":
                                                            "e2e-mini:1"})]}
    with tarfile.open(path, "w") as t:
        for name, data in [("oci-layout", b'{"imageLayoutVersion":"1.0.0"}'),
                           ("index.json", json.dumps(index).encode())] + \
                [("blobs/sha256/" + d, b) for d, b in blobs.items()]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))


class CustomTemplatesTest(unittest.TestCase):
    # The server's environment and `agent-sandbox run`'s extra arguments: what a subclass
    # changes to run every test on another backend (test_custom_templates_microvm.py).
    SERVER_ENV = {}
    RUN_ARGS = []

    @classmethod
    def setUpClass(cls):
        cls.data_dir = tempfile.mkdtemp(prefix="asb-e2e-custom-", dir="/var/tmp")
        cls.templates = os.path.join(cls.data_dir, "templates")
        os.mkdir(cls.templates)
        os.symlink(os.path.join(TEMPLATES, "base"), os.path.join(cls.templates, "base"))
        cls.ctx = os.path.join(cls.data_dir, "ctx")
        os.mkdir(cls.ctx)
        cls.mini = mini_rootfs_tar()
        cls.server = None

    @classmethod
    def tearDownClass(cls):
        if cls.server is not None:
            cls.server.close()
        wait_for_run_watchers(cls.data_dir)
        shutil.rmtree(cls.data_dir, ignore_errors=True)

    def cli(self, *args):
        return subprocess.run([BIN, "template"] + list(args) + ["--data-dir", self.data_dir],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=600)

    def build(self, dockerfile, name):
        with open(os.path.join(self.ctx, "Dockerfile"), "w") as f:
            f.write(dockerfile)
        return self.cli("build", "--dockerfile", os.path.join(self.ctx, "Dockerfile"),
                        "--name", name)

    def srv(self):
        cls = type(self)
        if cls.server is None or not cls.server.running():
            cls.server = Server(env=self.SERVER_ENV, data_dir=self.data_dir).start()
        return cls.server

    def sandbox_run(self, template, command):
        s = self.srv()
        sb = s.create(template=template)
        try:
            return s.run(sb["id"], command)
        finally:
            s.request("DELETE", "/v1/sandboxes/" + sb["id"], check=False)

    def proc_output(self, sid, body):
        """Starts a background process and returns its output (all of it: the stream of a
        process that exited replays it and ends)."""
        s = self.srv()
        r = s.request("POST", "/v1/sandboxes/%s/processes" % sid, body)
        self.assertEqual(r.status, 201, r)
        pid = r.json()["pid"]
        r = s.request("GET", "/v1/sandboxes/%s/processes/%d/stream?replay_bytes=65536" %
                      (sid, pid), timeout=60)
        self.assertEqual(r.status, 200, r)
        events = [json.loads(l) for l in r.body.decode().splitlines() if l]
        self.assertEqual(events[-1]["type"], "exit", events)
        return "".join(e.get("data", "") for e in events
                       if e["type"] in ("stdout", "stderr")).replace("\r\n", "\n")

    def check_defaults(self, template, workdir, user, uid, cmd="pwd; id -u"):
        """A sandbox of `template` reports and applies the defaults workdir/user (uid)."""
        s = self.srv()
        sb = s.create(template=template)
        sid = sb["id"]
        try:
            self.assertEqual((sb["default_workdir"], sb["default_user"]), (workdir, user))
            got = s.request("GET", "/v1/sandboxes/" + sid).json()
            self.assertEqual((got["default_workdir"], got["default_user"]), (workdir, user))
            listed = [x for x in s.request("GET", "/v1/sandboxes").json()["sandboxes"]
                      if x["id"] == sid]
            self.assertEqual((listed[0]["default_workdir"], listed[0]["default_user"]),
                             (workdir, user))
            want = "%s\n%s\n" % (workdir, uid)
            self.assertEqual(s.run(sid, cmd)["stdout"], want)
            self.assertEqual(self.proc_output(sid, {"command": cmd}), want)
            self.assertEqual(self.proc_output(sid, {"command": cmd, "pty": True}), want)
            # The request's own values win, each on its own.
            self.assertEqual(s.run(sid, cmd, workdir="/", user="sandbox")["stdout"], "/\n1000\n")
            self.assertEqual(s.run(sid, cmd, user="sandbox")["stdout"], "%s\n1000\n" % workdir)
            self.assertEqual(s.run(sid, cmd, workdir="/tmp")["stdout"], "/tmp\n%s\n" % uid)
            # Relative workdirs and file paths keep their meaning: under /workspace.
            self.assertEqual(s.run(sid, cmd, workdir=".")["stdout"], "/workspace\n%s\n" % uid)
            r = s.put_file(sid, "rel.txt", b"x")
            self.assertIn(r.status, (200, 201), r)
            self.assertEqual(s.run(sid, "read l < /workspace/rel.txt; echo $l")["stdout"], "x\n")
        finally:
            s.request("DELETE", "/v1/sandboxes/" + sid, check=False)

    def test_1_dockerfile_with_every_supported_instruction(self):
        with open(os.path.join(self.ctx, "hello.txt"), "w") as f:
            f.write("hello from the context\n")
        with open(os.path.join(self.ctx, "tool.tar.gz"), "wb") as f:
            f.write(layer({"opt/tool": b"#!/bin/sh\necho tool-ran\n"}))
        r = self.build(
            "FROM base\n"
            "ARG GREETING=hi\n"
            "ENV APP_HOME=/srv/app MODE=e2e\n"
            "RUN mkdir -p $APP_HOME && echo \"$GREETING $MODE\" > $APP_HOME/run.txt && "
            "mkdir /home/data && chown sandbox:sandbox /home/data\n"
            "COPY hello.txt ${APP_HOME}/\n"
            "ADD tool.tar.gz /\n"
            "WORKDIR $APP_HOME\n"
            "USER sandbox\n"
            "RUN id -un > /tmp/who; cat /tmp/who; umask 077; echo private > /home/data/p\n"
            "USER root\n"
            "RUN [\"/bin/sh\", \"-c\", \"pwd > where\"]\n"
            "LABEL template.displayName=\"E2E custom\" template.tools=\"tool,sh\" "
            "template.description=\"from a Dockerfile\"\n",
            "e2ecustom")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("Step 2/12 : ARG", r.stdout)
        self.assertIn("sandbox\n", r.stdout)  # RUN output is streamed
        # The API lists it with its labels (seed A's manifest fields).
        s = self.srv()
        listing = s.request("GET", "/v1/templates").json()
        mine = [t for t in listing["templates"] if t["name"] == "e2ecustom"]
        self.assertEqual(len(mine), 1, listing)
        self.assertEqual(mine[0]["display_name"], "E2E custom")
        self.assertEqual(mine[0]["tools"], ["tool", "sh"])
        self.assertEqual(mine[0]["description"], "from a Dockerfile")
        one = s.request("GET", "/v1/templates/e2ecustom").json()
        self.assertEqual(one["base"], "base")
        self.assertEqual((one["default_workdir"], one["default_user"]), ("/srv/app", "root"))
        # A sandbox from it sees every step's effect, and the ENV.
        out = self.sandbox_run("e2ecustom",
                               "cat /srv/app/run.txt /srv/app/hello.txt /srv/app/where; "
                               "/opt/tool; echo \"$APP_HOME $MODE\"")
        self.assertEqual(out["exit_code"], 0, out)
        self.assertEqual(out["stdout"],
                         "hi e2e\nhello from the context\n/srv/app\ntool-ran\n/srv/app e2e\n")
        # The final WORKDIR and USER are the defaults of every exec, process and terminal of
        # its sandboxes; a request's own workdir and user win.
        self.check_defaults("e2ecustom", "/srv/app", "root", "0")
        # A server restart (SIGKILL: nothing shut down) keeps a running sandbox's defaults.
        s = self.srv()
        sid = s.create(template="e2ecustom")["id"]
        try:
            s.kill9()
            s.start()
            got = s.request("GET", "/v1/sandboxes/" + sid).json()
            self.assertEqual((got["default_workdir"], got["default_user"]), ("/srv/app", "root"))
            self.assertEqual(s.run(sid, "pwd; id -u")["stdout"], "/srv/app\n0\n")
        finally:
            s.request("DELETE", "/v1/sandboxes/" + sid, check=False)
        # `agent-sandbox run` (no server) applies them too, under its own --workdir/--user.
        for extra, want in [([], "/srv/app\n0\n"),
                            (["-w", "/tmp", "-u", "sandbox"], "/tmp\n1000\n")]:
            r = subprocess.run([BIN, "run", "--data-dir", self.data_dir, "--template", "e2ecustom"]
                               + self.RUN_ARGS + extra + ["--", "sh", "-c", "pwd; id -u"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               timeout=120, env=dict(os.environ, **self.SERVER_ENV))
            self.assertEqual((r.returncode, r.stdout), (0, want), r.stderr)
        # What a `USER sandbox` step wrote belongs to the sandbox user inside (the template is
        # mounted idmapped), so even a private file is readable; the rest belongs to root.
        out = self.sandbox_run("e2ecustom", "stat -c '%U %a' /home/data/p /srv/app/run.txt; "
                                            "cat /home/data/p")
        self.assertEqual(out["stdout"], "sandbox 600\nroot 644\nprivate\n", out)

    def test_2_unsupported_instruction_is_a_clear_error(self):
        r = self.build("FROM base\nRUN true\nEXPOSE 8080\n", "e2ebad")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("Dockerfile line 3: EXPOSE is not supported", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.templates, "e2ebad")))
        # A final USER sandboxes cannot run as is refused before any step runs.
        with open(os.path.join(self.ctx, "mini.tar"), "wb") as f:
            f.write(self.mini)
        r = self.build("FROM scratch\nADD mini.tar /\nUSER root\nRUN true\nUSER app\n", "e2ebad")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("Dockerfile line 5: USER: user 'app' is not supported", r.stderr)
        self.assertNotIn("Step 2/", r.stdout)
        self.assertFalse(os.path.exists(os.path.join(self.templates, "e2ebad")))

    def test_3_oci_import_runs_a_command_and_a_failed_build_keeps_it(self):
        archive = os.path.join(self.data_dir, "image.tar")
        oci_archive(archive, [
            gzip.compress(self.mini),
            layer({"etc/motd-e2e": b"imported\n", "junk": b"x"}),
            layer({".wh.junk": None}),
        ], {"architecture": "amd64", "os": "linux",
            "config": {"Env": ["PATH=/usr/bin:/bin", "IMPORTED=yes"],
                       "WorkingDir": "/srv/imported/", "User": "0:0",
                       "Labels": {"template.displayName": "E2E import"}},
            "rootfs": {"type": "layers", "diff_ids": []}})
        r = self.cli("import", archive, "--name", "e2eimport")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # The image's WorkingDir (made by the import: no layer has it) and User are its
        # sandboxes' defaults (dash only: no `id`).
        self.check_defaults("e2eimport", "/srv/imported", "root", "0",
                            cmd="pwd; while read k v r; do [ $k = Uid: ] && echo $v; done "
                                "< /proc/self/status; true")
        run = "read line < /etc/motd-e2e; echo \"$line $IMPORTED\"; test -e /junk || echo gone"
        out = self.sandbox_run("e2eimport", run)
        self.assertEqual(out["stdout"], "imported yes\ngone\n", out)
        t = self.srv().request("GET", "/v1/templates/e2eimport").json()
        self.assertEqual(t["display_name"], "E2E import")
        self.assertEqual((t["default_workdir"], t["default_user"]), ("/srv/imported", "root"))
        # An image whose User sandboxes cannot run as is refused, naming it.
        bad = os.path.join(self.data_dir, "bad-user.tar")
        oci_archive(bad, [gzip.compress(self.mini)],
                    {"architecture": "amd64", "os": "linux", "config": {"User": "nobody"},
                     "rootfs": {"type": "layers", "diff_ids": []}})
        r = self.cli("import", bad, "--name", "e2ebaduser")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("user 'nobody' is not supported", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.templates, "e2ebaduser")))
        # A Dockerfile build of the same name whose RUN fails leaves it usable.
        with open(os.path.join(self.ctx, "mini.tar"), "wb") as f:
            f.write(self.mini)
        r = self.build("FROM scratch\nADD mini.tar /\nRUN exit 3\n", "e2eimport")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("line 3: RUN exit 3: exit status 3", r.stderr)
        out = self.sandbox_run("e2eimport", run)
        self.assertEqual(out["stdout"], "imported yes\ngone\n", out)

    def test_4_what_a_build_puts_under_workspace_is_every_sandboxs_workspace(self):
        # The most common Dockerfile there is: the app under a WORKDIR in /workspace. Before,
        # the sandbox's own workspace mount hid all of it and every exec failed in the missing
        # workdir. Now it seeds each new sandbox's workspace (a copy per sandbox, owned by the
        # sandbox user); a file left where a sandbox mounts its own directory is a warning.
        with open(os.path.join(self.ctx, "app.py"), "w") as f:
            f.write("print('app ran')\n")
        r = self.build(
            "FROM base\n"
            "WORKDIR /workspace/app\n"
            "COPY app.py .\n"
            "RUN echo built > run.txt && mkdir -p data && echo scratch > /tmp/left-behind\n",
            "e2eseed")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("warning: /tmp holds 1 entry that no sandbox will see", r.stdout)
        self.assertIn("/workspace holds 1 entry: every new sandbox", r.stdout)
        s = self.srv()
        a = s.create(template="e2eseed")["id"]
        b = s.create(template="e2eseed")["id"]
        try:
            out = s.run(a, "pwd; cat app.py run.txt; stat -c '%U' app.py data /workspace/app; "
                           "test -e /tmp/left-behind || echo tmp-is-fresh")
            self.assertEqual(out["exit_code"], 0, out)
            self.assertEqual(out["stdout"], "/workspace/app\nprint('app ran')\nbuilt\n"
                                            "sandbox\nsandbox\nsandbox\ntmp-is-fresh\n")
            # Each sandbox has its own copy: a change in one is not seen in the other.
            self.assertEqual(s.run(a, "echo changed > run.txt; rm app.py")["exit_code"], 0)
            self.assertEqual(s.run(b, "cat run.txt app.py")["stdout"], "built\nprint('app ran')\n")
            got = s.get_file(b, "/workspace/app/run.txt")
            self.assertEqual(got.body, b"built\n")
            # Counted against the quota like anything written there: `du` sees it.
            used = int(s.run(b, "du -sk /workspace/app | cut -f1")["stdout"])
            self.assertGreater(used, 0)
        finally:
            for sid in (a, b):
                s.request("DELETE", "/v1/sandboxes/" + sid, check=False)
        # A content that does not fit the asked workspace is a clear create error.
        with open(os.path.join(self.ctx, "big.bin"), "wb") as f:
            f.write(os.urandom(20 << 20))
        r = self.build("FROM base\nCOPY big.bin /workspace/\n", "e2eseedbig")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = s.request("POST", "/v1/sandboxes", {"template": "e2eseedbig", "workspace_mb": 16},
                      check=False)
        self.assertEqual(r.status, 400, r)
        self.assertIn("does not fit a workspace of 16 MiB", r.json()["error"]["message"])
        # An imported image's /workspace seeds the same way.
        archive = os.path.join(self.data_dir, "ws-image.tar")
        oci_archive(archive, [gzip.compress(self.mini),
                              layer({"workspace/from-image.txt": b"from the image\n"})],
                    {"architecture": "amd64", "os": "linux",
                     "config": {"WorkingDir": "/workspace"},
                     "rootfs": {"type": "layers", "diff_ids": []}})
        r = self.cli("import", archive, "--name", "e2eseedimport")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        out = self.sandbox_run("e2eseedimport", "read l < from-image.txt; echo $l")
        self.assertEqual(out["stdout"], "from the image\n", out)


if __name__ == "__main__":
    main()
