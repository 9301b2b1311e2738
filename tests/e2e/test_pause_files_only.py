"""The files-only pause over HTTP (`/v1` pause `{"memory": false}`; E2B's keepMemory: false;
SandboxLifecycle::Pause): the workspace is kept, every process and the runtime are gone from the
host, the quota slot is free, and resume starts the same sandbox afresh with its files; the
auto-pause at the TTL can keep only the files; a request wakes one made with auto_resume; and a
resume by a reboot (`{"memory": false}`) of a frozen sandbox ends what ran before. Recovery
after a crash is tested in src/core/manager_files_only_pause_test.cc."""

import time

from harness import ServerTestCase, main, sandbox_leftovers, sandbox_pids


def gone_after_a_while(server, sid):
    """What of sandbox `sid`'s runtime is still on the host after up to 3 s."""
    left = sandbox_leftovers(server, sid)
    for _ in range(30):
        if not left:
            break
        time.sleep(0.1)
        left = sandbox_leftovers(server, sid)
    return left


class FilesOnlyPauseTest(ServerTestCase):
    SERVER_ENV = {"AGENT_SANDBOX_MAX_SANDBOXES": "2",
                  "AGENT_SANDBOX_PAUSED_TIMEOUT_SECONDS": "3600"}

    def pause(self, sid, body=None):
        return self.server.request("POST", "/v1/sandboxes/%s/pause" % sid, body, check=False)

    def resume(self, sid, body=None):
        return self.server.request("POST", "/v1/sandboxes/%s/resume" % sid, body, check=False)

    def test_the_files_stay_the_runtime_goes_and_resume_starts_it_afresh(self):
        s = self.create(timeout_seconds=120)
        sid = s["id"]
        self.assertIsNone(s["paused_memory"])
        self.server.put_file(sid, "kept.txt", b"before the pause\n")
        self.server.run(sid, "mkdir -p deep/er && echo nested > deep/er/x && echo t > /tmp/t")
        r = self.server.request("POST", "/v1/sandboxes/%s/processes" % sid,
                                {"command": "sleep 1000"})
        self.assertEqual(r.status, 201, r)

        p = self.pause(sid, {"memory": False})
        self.assertEqual(p.status, 200, p)
        got = p.json()
        self.assertEqual((got["status"], got["paused_memory"]), ("paused", False))
        # Nothing of it runs or stays mounted: it costs disk only.
        self.assertEqual(gone_after_a_while(self.server, sid), [])
        self.assertEqual(sandbox_pids(sid), [])
        listed = {x["id"]: x for x in self.server.request("GET", "/v1/sandboxes").json()[
            "sandboxes"]}
        self.assertEqual((listed[sid]["status"], listed[sid]["paused_memory"]), ("paused", False))
        # The kept workspace is no snapshot of anyone's.
        self.assertEqual(self.server.request("GET", "/v1/snapshots?sandbox_id=" + sid)
                         .json()["snapshots"], [])
        r = self.server.request("POST", "/v1/sandboxes/%s/exec" % sid, {"command": "true"},
                                check=False)
        self.assertError(r, 409, "conflict")
        self.assertError(self.pause(sid, {"memory": False}), 409, "conflict")

        # Its quota slot is free (max 2): two more fit, and its resume then waits for one.
        a = self.create()["id"]
        b = self.create()["id"]
        r = self.resume(sid)
        self.assertError(r, 429, "limit_exceeded")
        self.assertEqual(self.server.request("GET", "/v1/sandboxes/" + sid).json()["status"],
                         "paused")
        self.assertEqual(self.server.request("DELETE", "/v1/sandboxes/" + b).status, 204)

        r = self.resume(sid, {"timeout_seconds": 300})
        self.assertEqual(r.status, 200, r)
        got = r.json()
        self.assertEqual((got["id"], got["status"], got["paused_memory"]), (sid, "running", None))
        self.assertEqual(got["timeout_seconds"], 300)
        self.assertEqual(self.server.get_file(sid, "kept.txt").body, b"before the pause\n")
        self.assertEqual(self.server.run(sid, "cat deep/er/x")["stdout"], "nested\n")
        # Afresh: no process of before, an empty /tmp; the sandbox works as any other.
        procs = self.server.request("GET", "/v1/sandboxes/%s/processes" % sid).json()
        self.assertEqual([x for x in procs["processes"] if x.get("status") == "running"], [])
        self.assertEqual(self.server.run(sid, "ls -A /tmp; pgrep -c sleep || true")["stdout"],
                         "0\n")
        self.server.put_file(sid, "after.txt", b"x")
        self.assertEqual(self.server.get_file(sid, "after.txt").body, b"x")
        self.assertEqual(self.server.request("DELETE", "/v1/sandboxes/" + a).status, 204)

    def test_destroying_it_while_paused_leaves_nothing(self):
        sid = self.create()["id"]
        self.server.put_file(sid, "f", b"1")
        self.assertEqual(self.pause(sid, {"memory": False}).status, 200)
        d = self.server.request("DELETE", "/v1/sandboxes/" + sid)
        self.assertEqual(d.status, 204, d)
        self.assertEqual(self.server.request("GET", "/v1/sandboxes/" + sid,
                                             check=False).status, 404)
        self.assertEqual(gone_after_a_while(self.server, sid), [])

    def test_auto_pause_at_the_ttl_can_keep_only_the_files(self):
        s = self.create(timeout_seconds=1, auto_pause=True, auto_pause_keep_memory=False)
        sid = s["id"]
        self.assertIs(s["auto_pause_keep_memory"], False)
        self.server.put_file(sid, "note.txt", b"still here\n")
        deadline = time.time() + 10
        got = None
        while time.time() < deadline:
            got = self.server.request("GET", "/v1/sandboxes/" + sid).json()
            if got["status"] == "paused":
                break
            time.sleep(0.1)
        self.assertEqual((got["status"], got["paused_memory"]), ("paused", False))
        self.assertEqual(gone_after_a_while(self.server, sid), [])
        self.assertEqual(self.resume(sid, {"timeout_seconds": 60}).status, 200)
        self.assertEqual(self.server.get_file(sid, "note.txt").body, b"still here\n")
        self.assertError(self.server.request("POST", "/v1/sandboxes",
                                             {"auto_pause_keep_memory": "no"}, check=False),
                         400, "invalid_request")

    def test_a_request_wakes_one_made_with_auto_resume(self):
        sid = self.create(auto_resume=True)["id"]
        self.server.put_file(sid, "note.txt", b"kept\n")
        self.assertEqual(self.pause(sid, {"memory": False}).status, 200)
        self.assertEqual(self.server.run(sid, "cat note.txt")["stdout"], "kept\n")
        got = self.server.request("GET", "/v1/sandboxes/" + sid).json()
        self.assertEqual((got["status"], got["paused_memory"]), ("running", None))

    def test_a_resume_by_a_reboot_ends_what_ran_before(self):
        sid = self.create()["id"]
        self.server.put_file(sid, "note.txt", b"kept\n")
        r = self.server.request("POST", "/v1/sandboxes/%s/processes" % sid,
                                {"command": "sleep 1000"})
        self.assertEqual(r.status, 201, r)
        p = self.pause(sid)
        self.assertEqual((p.status, p.json()["paused_memory"]), (200, True))
        self.assertError(self.resume(sid, {"memory": "no"}), 400, "invalid_request")
        r = self.resume(sid, {"memory": False})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.server.run(sid, "pgrep -c sleep || true")["stdout"], "0\n")
        self.assertEqual(self.server.get_file(sid, "note.txt").body, b"kept\n")


if __name__ == "__main__":
    main()
