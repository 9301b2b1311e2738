#!/usr/bin/env python3
"""The microvm backend beside its yardsticks, in one run (docs/adr/0025). Not run by CI.

  raw boot     QEMU booting the same guest kernel and base initramfs to the init's probe
               marker and powering off (asb.probe=1): the floor a create cannot beat
  create       POST /v1/sandboxes on a --backend microvm server, to its 201 (the guest's
               sandboxd answered), then the first output of `echo`
  exec true    the round trip of a sync exec of `true` in a running sandbox, microvm and ns
  file 16 MiB  PUT then GET of a 16 MiB file through the file API, microvm and ns
  idle PSS     host memory (proportional set size: shared pages split among their users) of
               each of --idle idle sandboxes, all running at once: QEMU of each microVM, every
               host process of each ns sandbox

Every row names the accelerator; TCG figures are software emulation's (these machines have no
usable KVM) and say nothing of a KVM host.

    ASB_BIN=build/bin/agent-sandbox python3 bench/bench_microvm.py [--n 5] [--idle 10]
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from harness import Server, missing_prerequisite  # noqa: E402
from test_microvm import vm_cgroup_name  # noqa: E402

GUEST = os.environ.get("AGENT_SANDBOX_MICROVM_GUEST", "/var/lib/agent-sandbox/microvm")
QEMU = "/usr/bin/qemu-system-x86_64"


def ms(t0):
    return (time.perf_counter() - t0) * 1000.0


def raw_boot(accel):
    argv = [QEMU, "-M", "microvm", "-accel", "tcg,thread=multi" if accel == "tcg" else "kvm",
            "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot", "-m", "128",
            "-kernel", os.path.join(GUEST, "vmlinuz"),
            "-initrd", os.path.join(GUEST, "initrd-base.cpio"),
            "-append", "console=ttyS0 quiet tsc_early_khz=2500000 panic=-1 asb.probe=1"]
    t0 = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120,
                   check=True)
    return ms(t0)


def sandbox_pss_kib(cgroup_name, sid):
    """PSS of every host process in the cgroups of sandbox `sid` under our `cgroup_name`."""
    marker = "/%s/%s" % (cgroup_name, sid)
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cgroup" % pid) as f:
                if not any(l.rstrip("\n").split(":", 2)[2].startswith(marker) for l in f):
                    continue
            with open("/proc/%s/smaps_rollup" % pid) as f:
                total += sum(int(l.split()[1]) for l in f if l.startswith("Pss:"))
        except (OSError, IndexError, ValueError):
            continue
    return total


def idle_pss(server, cgroup_name, count, memory_mb):
    """Starts `count` sandboxes, lets them settle, returns each one's PSS (MiB); destroys them
    whatever happens."""
    made = []
    try:
        for _ in range(count):
            made.append(server.create(template="base", memory_mb=memory_mb)["id"])
            server.run(made[-1], "true")
        time.sleep(5)
        return [sandbox_pss_kib(cgroup_name, sid) / 1024.0 for sid in made]
    finally:
        for sid in made:
            server.request("DELETE", "/v1/sandboxes/" + sid, check=False)


def row(name, accel, times):
    times = sorted(times)
    print("%-26s %-5s %10.1f %10.1f %10.1f" % (name, accel, times[0], statistics.median(times),
                                               times[-1]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5)
    ap.add_argument("--idle", type=int, default=10, help="sandboxes of the idle PSS rows")
    args = ap.parse_args()
    why = missing_prerequisite()
    if why or not os.access(QEMU, os.X_OK) or not os.path.isfile(os.path.join(GUEST, "vmlinuz")):
        print("skipped:", why or "no QEMU or microVM guest (scripts/microvm-guest.sh)")
        return 0
    vm = Server(env={"AGENT_SANDBOX_BACKEND": "microvm",
                     "AGENT_SANDBOX_MICROVM_GUEST": GUEST}).start()
    ns = Server().start()
    made = []
    try:
        accel = vm.request("GET", "/v1/backends").json()["backends"][0]["accelerator"]
        print("%-26s %-5s %10s %10s %10s" % ("", "accel", "min ms", "median ms", "max ms"))
        row("raw QEMU boot to marker", accel, [raw_boot(accel) for _ in range(args.n)])
        creates, firsts = [], []
        vm.request("DELETE", "/v1/sandboxes/" + vm.create()["id"])  # the template's disk, once
        for _ in range(args.n):
            t0 = time.perf_counter()
            sid = vm.create()["id"]
            creates.append(ms(t0))
            vm.run(sid, "echo first")
            firsts.append(ms(t0))
            vm.request("DELETE", "/v1/sandboxes/" + sid)
        row("create (to 201)", accel, creates)
        row("create to first output", accel, firsts)
        data = os.urandom(16 << 20)
        for name, server, acc in (("microvm", vm, accel), ("ns", ns, "-")):
            sid = server.create()["id"]
            made.append((server, sid))
            rtt = []
            for _ in range(max(args.n * 4, 20)):
                t0 = time.perf_counter()
                server.run(sid, "true")
                rtt.append(ms(t0))
            row("exec true, " + name, acc, rtt)
            io = []
            for _ in range(args.n):
                t0 = time.perf_counter()
                assert server.put_file(sid, "big.bin", data).status == 200
                assert server.get_file(sid, "big.bin").body == data
                io.append(ms(t0))
            row("file 16 MiB up+down, " + name, acc, io)
        if args.idle > 0:
            print("%-26s %-5s %10s %10s %10s  (%d idle sandboxes of 256 MiB at once)"
                  % ("", "", "min MiB", "median MiB", "max MiB", args.idle))
            ns_cgroup = vm_cgroup_name(ns.data_dir)[:-len("-vm")]
            row("idle PSS, microvm", accel, idle_pss(vm, vm_cgroup_name(vm.data_dir), args.idle,
                                                      256))
            row("idle PSS, ns", "-", idle_pss(ns, ns_cgroup, args.idle, 256))
    finally:
        for server, sid in made:
            server.request("DELETE", "/v1/sandboxes/" + sid, check=False)
        vm.close()
        ns.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
