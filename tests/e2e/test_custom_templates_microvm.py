#!/usr/bin/env python3
"""Dockerfile-built and imported templates on the microvm backend (docs/adr/0012, 0025): every
test of test_custom_templates.py with each sandbox a QEMU microVM (the template's rootfs a
read-only EROFS disk, what it holds under /workspace the seed of each VM's workspace disk, the
owners a `USER sandbox` step left as the guest sees them), `agent-sandbox run --backend
microvm` included. Plus what only a VM's read-only root shows: a template without a mount point
the guest needs is a create error that names it, not a silent hang. Skips with the reason where
QEMU or the microVM guest is missing.
"""
import gzip
import os

from harness import main
from test_custom_templates import CustomTemplatesTest, oci_archive
from test_microvm import qemu_pids
from test_pause_microvm import MICROVM_ENV, OnMicrovm


class MicrovmCustomTemplatesTest(OnMicrovm, CustomTemplatesTest):
    SERVER_ENV = MICROVM_ENV
    RUN_ARGS = ["--backend", "microvm"]

    def test_5_a_template_missing_a_mount_point_is_a_clear_error(self):
        # Templates built before /run was one of FinishRootfs's mount points lack it; the
        # guest cannot make it on a read-only root. One made here: a small import, its /run
        # removed before any sandbox of it (the disk image is made at the first create).
        archive = os.path.join(self.data_dir, "no-run.tar")
        oci_archive(archive, [gzip.compress(self.mini)],
                    {"architecture": "amd64", "os": "linux", "config": {},
                     "rootfs": {"type": "layers", "diff_ids": []}})
        r = self.cli("import", archive, "--name", "e2enorun")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        os.rmdir(os.path.join(self.templates, "e2enorun", "rootfs", "run"))
        s = self.srv()
        r = s.request("POST", "/v1/sandboxes", {"template": "e2enorun"}, check=False)
        self.assertEqual(r.status, 502, r)
        message = r.json()["error"]["message"]
        self.assertIn("the template's root has no directory run: build or import it again", message)
        self.assertNotIn(self.data_dir, message)
        # The failure is the sandbox's record (status error, the same reason), and no QEMU of
        # it is left running.
        listed = [x for x in s.request("GET", "/v1/sandboxes").json()["sandboxes"]
                  if x["template"] == "e2enorun"]
        self.assertEqual([x["status"] for x in listed], ["error"])
        self.assertIn("root has no directory run", listed[0]["error_message"])
        self.assertEqual(qemu_pids(self.data_dir), [])
        s.request("DELETE", "/v1/sandboxes/" + listed[0]["id"], check=False)


del CustomTemplatesTest  # run only the microVM variant from this file

if __name__ == "__main__":
    main()
