#!/usr/bin/env python3
"""Snapshot, rollback and fork times over the real server (ADR 0008). Not run by CI.

For workspaces of 1 MiB, 100 MiB and 1 GiB, shaped as many small files or one large file of
random (incompressible) bytes, it times over HTTP:
  snapshot  POST /v1/sandboxes/{id}/snapshots
  rollback  POST /v1/sandboxes/{id}/rollback
  fork      POST /v1/snapshots/{id}/fork (to the new sandbox answering)
beside the reference `tar -cf - . | zstd -3` of the same tree on the host, once per workspace
pool: "none" (images on the data dir's file system: ext4 here, so clones are sparse copies) and
"xfs" (the server's own reflink XFS loop file, --workspace-pool=xfs, so clones are reflinks).
Which path each operation took is read from the server's log: the snapshot's image method
(reflink / sparse-copy; the tar.zst is made on the first GET /archive, timed too), rollback "image, <method>" or "archive", fork "image" or "archive".
Also the raw copy-on-write primitives on a workspace image: `cp --reflink=always` on an XFS loop
file system (mkfs.xfs -m reflink=1, made and removed here) and a sparse copy on the data dir's
ext4 (--no-cow skips them).

    ASB_BIN=build/bin/agent-sandbox python3 bench/bench_snapshots.py [--sizes 1,100,1024] \
        [--pools none,xfs]
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from harness import Server, missing_prerequisite  # noqa: E402


def ms(t0):
    return (time.perf_counter() - t0) * 1000.0


def fill(server, sid, mib, shape):
    if shape == "one":
        cmd = "head -c %d /dev/urandom > /workspace/big.bin" % (mib << 20)
    else:
        size_kib = 4 if mib <= 1 else 64
        cmd = ("mkdir -p /workspace/many && cd /workspace/many && "
               "head -c %d /dev/urandom | split -b %dk -a 6 - f") % (mib << 20, size_kib)
    r = server.run(sid, cmd, timeout=600)
    assert r["exit_code"] == 0, r


def timed(server, method, path, body=None):
    t0 = time.perf_counter()
    r = server.request(method, path, body=json.dumps(body).encode() if body else None,
                       timeout=900)
    t = ms(t0)
    assert r.status in (200, 201), r
    return t, r.json()


def reference_tar_zstd(ws):
    t0 = time.perf_counter()
    subprocess.run("tar -C %s -cf - . | zstd -3 -q -c > /dev/null" % ws, shell=True, check=True)
    return ms(t0)


def cow_figures(mib):
    """cp --reflink=always of a sparse ext4 image holding `mib` MiB of data, on XFS and ext4."""
    out = {}
    base = tempfile.mkdtemp(prefix="asb-bench-cow-", dir="/var/tmp")
    xfs_file = os.path.join(base, "xfs.img")
    mnt = os.path.join(base, "xfs")
    os.mkdir(mnt)
    mounted = False
    try:
        subprocess.run(["truncate", "-s", "8G", xfs_file], check=True)
        subprocess.run(["mkfs.xfs", "-q", "-m", "reflink=1", xfs_file], check=True)
        subprocess.run(["mount", "-o", "loop", xfs_file, mnt], check=True)
        mounted = True
        for fs, d in (("xfs", mnt), ("ext4", base)):
            img = os.path.join(d, "ws.img")
            subprocess.run(["truncate", "-s", "2G", img], check=True)
            subprocess.run("dd if=/dev/urandom of=%s bs=1M count=%d conv=notrunc status=none"
                           % (img, mib), shell=True, check=True)
            os.sync()
            for mode, args in (("reflink", ["--reflink=always"]),
                               ("sparse-copy", ["--reflink=never", "--sparse=always"])):
                dst = img + "." + mode
                t0 = time.perf_counter()
                r = subprocess.run(["cp"] + args + [img, dst], capture_output=True)
                t = ms(t0)
                out["%s %s" % (fs, mode)] = t if r.returncode == 0 else "unsupported"
                if os.path.exists(dst):
                    os.unlink(dst)
            os.unlink(img)
    finally:
        if mounted:
            subprocess.run(["umount", mnt])
        subprocess.run(["rm", "-rf", base])
    return out


def paths_taken(server, snap_id, sid, fork_id):
    """What the server logged about the image path of this snapshot, rollback and fork."""
    log = server.log_tail(4000)
    m = re.search(r"snapshot %s image: ([\w-]+)" % snap_id, log)
    snap = m.group(1) if m else "archive only"
    m = re.search(r"sandbox_id=%s rolled back to %s \(([^)]*)\)" % (sid, snap_id), log)
    rb = m.group(1) if m else "?"
    m = re.search(r"sandbox_id=%s forked from %s \(([^)]*)\)" % (fork_id, snap_id), log)
    fork = m.group(1) if m else "?"
    if fork == "image":
        fork = "image, " + snap  # the same CloneImage on the same file system
    return snap, rb, fork


def run_pool(pool, sizes):
    env = {"AGENT_SANDBOX_MAX_SNAPSHOT_BYTES": str(4 << 30),
           "AGENT_SANDBOX_MAX_WORKSPACE_MB": str(4096)}
    if pool != "none":
        env.update({"AGENT_SANDBOX_WORKSPACE_POOL": pool, "AGENT_SANDBOX_WORKSPACE_POOL_GB": "64"})
    server = Server(env).start()
    state = os.path.join(server.data_dir, "xfs" if pool == "xfs" else "", "sandboxes")
    rows = []
    try:
        for mib in sizes:
            for shape in ("many", "one"):
                sb = server.create(workspace_mb=max(64, mib * 2 + 64), memory_mb=1024)
                sid = sb["id"]
                fill(server, sid, mib, shape)
                ws = os.path.join(state, sid, "ws")
                ref = reference_tar_zstd(ws) if os.path.isdir(ws) else float("nan")
                t_snap, snap = timed(server, "POST", "/v1/sandboxes/%s/snapshots" % sid)
                server.run(sid, "touch /workspace/new")
                t_rb, _ = timed(server, "POST", "/v1/sandboxes/%s/rollback" % sid,
                                {"snapshot_id": snap["id"]})
                t_fork, fork = timed(server, "POST", "/v1/snapshots/%s/fork" % snap["id"])
                t0 = time.perf_counter()
                ar = server.request("GET", "/v1/snapshots/%s/archive" % snap["id"], timeout=900)
                t_arch = ms(t0)
                assert ar.status == 200, ar
                p_snap, p_rb, p_fork = paths_taken(server, snap["id"], sid, fork["id"])
                server.request("DELETE", "/v1/sandboxes/" + fork["id"], timeout=120)
                server.request("DELETE", "/v1/sandboxes/" + sid, timeout=120)
                server.request("DELETE", "/v1/snapshots/" + snap["id"])
                rows.append((pool, mib, shape, t_snap, p_snap, t_rb, p_rb, t_fork, p_fork, t_arch,
                             ref))
                print("pool=%-4s %5d MiB %-4s snapshot %7.0f ms (%s)  rollback %7.0f ms (%s)  "
                      "fork %7.0f ms (%s)  first archive GET %7.0f ms  tar|zstd %7.0f ms"
                      % rows[-1], flush=True)
    finally:
        server.close()
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1,100,1024", help="MiB, comma separated")
    ap.add_argument("--pools", default="none,xfs", help="workspace pools: none, xfs")
    ap.add_argument("--no-cow", action="store_true")
    a = ap.parse_args()
    reason = missing_prerequisite()
    if reason:
        print("SKIP: " + reason)
        return 77
    sizes = [int(x) for x in a.sizes.split(",")]
    rows = []
    for pool in a.pools.split(","):
        rows += run_pool(pool, sizes)
    print("\n| pool | workspace | snapshot | rollback | fork | first GET archive | tar\\|zstd |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for (pool, mib, shape, t_snap, p_snap, t_rb, p_rb, t_fork, p_fork, t_arch, ref) in rows:
        size = "1 GiB" if mib == 1024 else "%d MiB" % mib
        print("| %s | %s %s | %.0f ms (%s) | %.0f ms (%s) | %.0f ms (%s) | %.0f ms | %.0f ms |"
              % (pool, size, shape, t_snap, p_snap, t_rb, p_rb, t_fork, p_fork, t_arch, ref))
    if not a.no_cow:
        for mib in sizes:
            for k, v in cow_figures(mib).items():
                print("cow %5d MiB %-17s %s" % (mib, k, "%.1f ms" % v if isinstance(v, float)
                                                 else v), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
