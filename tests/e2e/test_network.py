#!/usr/bin/env python3
"""ADR 0013: networked sandboxes against a test "internet" built in network namespaces.

Safety: no packet may leave for a real address. The test builds a router namespace joined to
the host by a veth pair (the server's uplink, AGENT_SANDBOX_NETWORK_UPLINK), with the test
servers (HTTP on 198.19.1.1, 198.19.2.2, 198.19.3.3, dnsmasq on 198.19.0.53, and
169.254.169.254) on the router's loopback. 198.18.0.0/15 is reserved for benchmarking (RFC
2544), so no real host lives there. A policy-routing rule sends everything that arrives from
the server's bridge to the router (table of its own), and the server's own rules drop what
would leave by any other interface. Everything is removed afterwards, also on failure, and the
last test checks that the server removed its bridge, tables and veths.
"""
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

import harness

PID = os.getpid()
NS = "asbt%d" % (PID % 100000)          # the router ("internet") namespace
UPLINK = "asbtu%d" % (PID % 100000)     # host end of the uplink veth
SUBNET_OCTET = 100 + PID % 100
SUBNET = "10.214.%d.0/24" % SUBNET_OCTET
GATEWAY = "10.214.%d.1" % SUBNET_OCTET
RT_TABLE = str(20000 + PID % 10000)
ALLOWED_IP, DENIED_IP, PORTS_IP, DNS_IP, META_IP = (
    "198.19.1.1", "198.19.2.2", "198.19.3.3", "198.19.0.53", "169.254.169.254")
BIG_BYTES = 400_000
# ADR 0013 (rebinding guard): a hostile DNS answers private and local addresses for allowed names (rebinding).
# PRIVATE_IP lives on the router too, so an admitted address would connect.
PRIVATE_IP, PRIVATE2_IP = "10.99.77.1", "192.168.77.1"
REBIND = {"rebind10.test": PRIVATE_IP, "rebind192.test": PRIVATE2_IP,
          "rebind127.test": "127.0.0.1", "rebindgw.test": GATEWAY}


def sh(*args, check=True):
    return subprocess.run(list(args), check=check, capture_output=True, text=True)


def fnv1a(text):
    h = 2166136261
    for b in text.encode():
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return "%06x" % (h & 0xFFFFFF)


def missing():
    if os.geteuid() != 0:
        return "needs root"
    for tool in ("ip", "nft", "tc", "dnsmasq", "nsenter"):
        if not shutil.which(tool):
            return "%s not installed (scripts/install-deps.sh)" % tool
    return harness.missing_prerequisite()


class Internet:
    """The router namespace with its servers, the uplink and the routes into it."""

    def __init__(self, bridge):
        self.bridge = bridge
        self.procs = []
        self.dir = tempfile.mkdtemp(prefix="asb-net-www-", dir="/var/tmp")
        self.undo = []

    def up(self):
        sh("ip", "netns", "add", NS)
        self.undo.append(lambda: sh("ip", "netns", "del", NS, check=False))
        sh("ip", "link", "add", UPLINK, "type", "veth", "peer", "name", "up0", "netns", NS)
        self.undo.append(lambda: sh("ip", "link", "del", UPLINK, check=False))
        sh("ip", "addr", "add", "198.18.0.1/30", "dev", UPLINK)
        sh("ip", "link", "set", UPLINK, "up")
        n = ["ip", "netns", "exec", NS]
        sh(*n, "ip", "addr", "add", "198.18.0.2/30", "dev", "up0")
        sh(*n, "ip", "link", "set", "up0", "up")
        sh(*n, "ip", "link", "set", "lo", "up")
        for a in (ALLOWED_IP, DENIED_IP, PORTS_IP, DNS_IP, META_IP, PRIVATE_IP, PRIVATE2_IP):
            sh(*n, "ip", "addr", "add", a + "/32", "dev", "lo")
        # The host reaches the test servers (the resolver's upstream) through the uplink; the
        # route goes with the veth.
        sh("ip", "route", "add", "198.19.0.0/16", "via", "198.18.0.2", "dev", UPLINK)
        # Whatever the sandboxes send is routed to the router, never to a real interface.
        sh("ip", "route", "add", "default", "via", "198.18.0.2", "dev", UPLINK, "table", RT_TABLE)
        sh("ip", "rule", "add", "iif", self.bridge, "lookup", RT_TABLE, "priority", "100")
        self.undo.append(lambda: sh("ip", "rule", "del", "iif", self.bridge, "lookup", RT_TABLE,
                                    "priority", "100", check=False))
        with open(os.path.join(self.dir, "hello.txt"), "w") as f:
            f.write("hello from the test internet\n")
        with open(os.path.join(self.dir, "big.bin"), "wb") as f:
            f.write(os.urandom(BIG_BYTES))
        for port in ("80", "8443", "9000"):
            self.spawn(n + ["python3", "-m", "http.server", "-b", "0.0.0.0", port], cwd=self.dir)
        self.spawn(n + ["dnsmasq", "-k", "--conf-file=/dev/null", "--no-resolv", "--no-hosts",
                        "--bind-interfaces", "--listen-address=" + DNS_IP, "--user=root",
                        "--pid-file=", "--log-facility=-",
                        "--address=/allowed.test/" + ALLOWED_IP,
                        "--address=/denied.test/" + DENIED_IP,
                        "--address=/ports.test/" + PORTS_IP] +
                   ["--address=/%s/%s" % kv for kv in REBIND.items()])
        deadline = time.time() + 10
        while time.time() < deadline:   # the servers answer on the router's addresses
            if sh(*n, "python3", "-c", "import socket;socket.create_connection(('%s',80),1);"
                  "socket.create_connection(('%s',9000),1)" % (ALLOWED_IP, ALLOWED_IP),
                  check=False).returncode == 0:
                break
            time.sleep(0.1)

    def spawn(self, argv, cwd=None):
        p = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(p)

    def down(self):
        for p in self.procs:
            p.kill()
            p.wait()
        for u in reversed(self.undo):
            u()
        shutil.rmtree(self.dir, ignore_errors=True)


PY_CONNECT = r"""
import socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3).close()
    print("connected")
except OSError as e:
    print("refused", e)
"""

PY_RESOLVE = r"""
import socket, sys
try:
    print("resolved", socket.gethostbyname(sys.argv[1]))
except OSError as e:
    print("unresolved", e)
"""

PY_GET = r"""
import sys, time, urllib.request
t = time.time()
try:
    body = urllib.request.urlopen(sys.argv[1], timeout=30).read()
    print("ok", len(body), time.time() - t)
except Exception as e:
    print("failed", e)
"""


class NetworkTest(harness.ServerTestCase):
    internet = None

    @classmethod
    def backend_env(cls):
        """The server's backend (test_network_microvm.py runs every test on microVMs)."""
        return {}

    @classmethod
    def missing_backend(cls):
        return None

    @classmethod
    def setUpClass(cls):
        reason = missing() or cls.missing_backend()
        if reason:
            raise unittest.SkipTest(reason)
        cls.server = harness.Server(dict({
            "AGENT_SANDBOX_NETWORK_SUBNET": SUBNET,
            "AGENT_SANDBOX_NETWORK_UPLINK": UPLINK,
            "AGENT_SANDBOX_DNS_UPSTREAM": DNS_IP,
            "AGENT_SANDBOX_E2B_INTERNET_DEFAULT": "true",
        }, **cls.backend_env()))
        cls.hash = fnv1a(os.path.join(cls.server.data_dir, "sandboxes"))
        cls.bridge = "asb" + cls.hash
        cls.internet = Internet(cls.bridge)
        try:
            cls.internet.up()
            cls.server.start()
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.server:
            cls.server.close()
        if cls.internet:
            cls.internet.down()
        leftovers = cls.leftovers()
        # Last resort, so that a failed run does not leave state on the host.
        sh("nft", "delete", "table", "inet", "asb_" + cls.hash, check=False)
        sh("nft", "delete", "table", "bridge", "asb_" + cls.hash, check=False)
        sh("ip", "link", "del", cls.bridge, check=False)
        assert not leftovers, "left behind: %s" % leftovers

    @classmethod
    def leftovers(cls):
        out = []
        tables = sh("nft", "list", "tables").stdout
        if "asb_" + cls.hash in tables:
            out.append("nft table asb_" + cls.hash)
        links = sh("ip", "-br", "link").stdout
        for line in links.splitlines():
            if line.startswith("asb" + cls.hash) or line.startswith(UPLINK):
                out.append("link " + line.split()[0])
        if NS in sh("ip", "netns", "list").stdout:
            out.append("netns " + NS)
        if ("lookup " + RT_TABLE) in sh("ip", "rule", "list").stdout:
            out.append("ip rule for table " + RT_TABLE)
        return out

    def py(self, sid, script, *args, timeout=60):
        r = self.server.exec(sid, {"argv": ["python3", "-c", script] + list(args),
                                   "timeout": timeout}).json()
        self.assertEqual(r.get("exit_code"), 0, r)
        return r["stdout"].strip()

    def networked(self, policy=None):
        spec = {"network": True}
        if policy is not None:
            spec["network_policy"] = policy
        return self.create(**spec)

    def test_allow_list_domains_and_direct_ip(self):
        s = self.networked({"allow_out": ["allowed.test"]})
        sid = s["id"]
        self.assertTrue(s["network"])
        out = self.py(sid, PY_RESOLVE, "allowed.test")
        self.assertEqual(out, "resolved " + ALLOWED_IP)
        self.assertTrue(self.py(sid, PY_GET, "http://allowed.test/hello.txt").startswith("ok 29"))
        self.assertTrue(self.py(sid, PY_RESOLVE, "denied.test").startswith("unresolved"))
        # A direct connection to the address of a name that was not allowed is refused.
        self.assertTrue(self.py(sid, PY_CONNECT, DENIED_IP, "80").startswith("refused"))
        r = self.server.request("GET", "/v1/sandboxes/%s/network" % sid)
        self.assertEqual(r.json()["allow_out"], ["allowed.test"])

    def test_hostile_dns_answers_admit_nothing_private(self):
        s = self.networked({"allow_out": ["allowed.test"] + list(REBIND)})
        sid = s["id"]
        for name in REBIND:   # removed from the answer: the name has no address left
            self.assertTrue(self.py(sid, PY_RESOLVE, name).startswith("unresolved"), name)
        for ip in (PRIVATE_IP, PRIVATE2_IP):
            self.assertTrue(self.py(sid, PY_CONNECT, ip, "80").startswith("refused"), ip)
        self.assertEqual(self.py(sid, PY_RESOLVE, "allowed.test"), "resolved " + ALLOWED_IP)
        learned = sh("nft", "list", "table", "inet", "asb_" + self.hash).stdout
        for ip in (PRIVATE_IP, PRIVATE2_IP, "127.0.0.1"):   # (the gateway is in the base rules)
            self.assertNotIn(ip + " ", learned)
        self.assertIn(ALLOWED_IP, learned)
        # Named explicitly as a CIDR, the private range is relayed and reachable by that rule.
        t = self.networked({"allow_out": ["rebind10.test", "10.99.77.0/24:80/tcp"]})["id"]
        self.assertEqual(self.py(t, PY_RESOLVE, "rebind10.test"), "resolved " + PRIVATE_IP)
        self.assertEqual(self.py(t, PY_CONNECT, PRIVATE_IP, "80"), "connected")

    def test_cidr_and_port_rules(self):
        s = self.networked({"allow_out": [PORTS_IP + "/32:8443/tcp", "198.19.1.0/24"],
                            "deny_out": ["198.19.1.1/32:9000/tcp"]})
        sid = s["id"]
        self.assertEqual(self.py(sid, PY_CONNECT, PORTS_IP, "8443"), "connected")
        self.assertTrue(self.py(sid, PY_CONNECT, PORTS_IP, "80").startswith("refused"))
        self.assertEqual(self.py(sid, PY_CONNECT, ALLOWED_IP, "80"), "connected")
        self.assertTrue(self.py(sid, PY_CONNECT, ALLOWED_IP, "9000").startswith("refused"))
        self.assertTrue(self.py(sid, PY_CONNECT, DENIED_IP, "80").startswith("refused"))

    def test_always_on_rules(self):
        # The default policy allows everything; the always-on rules still hold.
        a = self.networked()["id"]
        b = self.networked()["id"]
        self.assertEqual(self.py(a, PY_CONNECT, DENIED_IP, "80"), "connected")
        self.assertTrue(self.py(a, PY_CONNECT, META_IP, "80").startswith("refused"))
        # A host port open on every address, and the API port, via the gateway.
        lst = socket.socket()
        lst.bind(("0.0.0.0", 0))
        lst.listen(4)
        try:
            port = str(lst.getsockname()[1])
            self.assertTrue(self.py(a, PY_CONNECT, GATEWAY, port).startswith("refused"))
            self.assertTrue(
                self.py(a, PY_CONNECT, GATEWAY, str(self.server.port)).startswith("refused"))
        finally:
            lst.close()
        # Sandbox to sandbox: b listens, a cannot reach it.
        self.server.exec(b, {"command": "setsid python3 -m http.server 8000 >/dev/null 2>&1 &"})
        b_ip = self.py(b, "import socket;s=socket.socket(2,2);s.connect(('%s',80));"
                          "print(s.getsockname()[0])" % ALLOWED_IP)
        self.assertTrue(b_ip.startswith("10.214."), b_ip)
        time.sleep(0.5)
        self.assertEqual(self.py(b, PY_CONNECT, "127.0.0.1", "8000"), "connected")
        self.assertTrue(self.py(a, PY_CONNECT, b_ip, "8000").startswith("refused"))

    def test_policy_replaced_at_run_time(self):
        sid = self.networked({"allow_out": ["allowed.test"]})["id"]
        self.assertTrue(self.py(sid, PY_RESOLVE, "allowed.test").startswith("resolved"))
        self.assertTrue(self.py(sid, PY_CONNECT, DENIED_IP, "80").startswith("refused"))
        r = self.server.request("PUT", "/v1/sandboxes/%s/network" % sid,
                                {"allow_out": ["denied.test"]})
        self.assertEqual(r.json()["allow_out"], ["denied.test"])
        self.assertTrue(self.py(sid, PY_RESOLVE, "allowed.test").startswith("unresolved"))
        self.assertTrue(self.py(sid, PY_CONNECT, ALLOWED_IP, "80").startswith("refused"))
        self.assertEqual(self.py(sid, PY_RESOLVE, "denied.test"), "resolved " + DENIED_IP)
        self.assertEqual(self.py(sid, PY_CONNECT, DENIED_IP, "80"), "connected")
        bad = self.server.request("PUT", "/v1/sandboxes/%s/network" % sid,
                                  {"allow_out": ["10.0.0.0/33"]}, check=False)
        self.assertError(bad, 400, "invalid_request")

    def test_bandwidth_limit(self):
        sid = self.networked({"bandwidth_kbit": 1000, "burst_kbit": 32})["id"]
        out = self.py(sid, PY_GET, "http://%s/big.bin" % ALLOWED_IP).split()
        self.assertEqual(out[:2], ["ok", str(BIG_BYTES)], out)
        kbit = BIG_BYTES * 8 / 1000 / float(out[2])
        print("bandwidth: %.0f kbit/s measured for a 1000 kbit/s limit" % kbit)
        self.assertGreater(kbit, 800)
        self.assertLess(kbit, 1200)

    def test_without_network_is_loopback_only(self):
        self.networked()  # the server's nft tables exist while the other sandbox is destroyed
        sid = self.create()["id"]
        self.assertTrue(self.py(sid, PY_CONNECT, ALLOWED_IP, "80").startswith("refused"))
        r = self.server.request("GET", "/v1/sandboxes/%s/network" % sid, check=False)
        self.assertError(r, 400, "invalid_request")
        # Its destroy used to fail (502, left `stopping`): the network detach's nft transaction
        # added a map element jumping to the chain this sandbox never had.
        r = self.server.request("DELETE", "/v1/sandboxes/" + sid)
        self.assertEqual(r.status, 204, r)
        r = self.server.request("POST", "/v1/sandboxes",
                                {"network_policy": {"allow_out": []}}, check=False)
        self.assertError(r, 400, "invalid_request")

    def test_restart_keeps_network_and_destroy_removes_it(self):
        sid = self.networked({"allow_out": ["allowed.test"]})["id"]
        self.assertTrue(self.py(sid, PY_RESOLVE, "allowed.test").startswith("resolved"))
        # SIGKILL: nothing of the server's network state is cleaned up; the new process adopts
        # the sandbox, rewrites the base rules and serves its DNS again under its policy.
        self.server.kill9()
        self.server.start()
        self.assertEqual(self.py(sid, PY_RESOLVE, "allowed.test"), "resolved " + ALLOWED_IP)
        self.assertTrue(self.py(sid, PY_RESOLVE, "denied.test").startswith("unresolved"))
        self.assertEqual(self.py(sid, PY_CONNECT, ALLOWED_IP, "80"), "connected")
        self.assertTrue(self.py(sid, PY_CONNECT, DENIED_IP, "80").startswith("refused"))
        r = self.server.request("GET", "/v1/sandboxes/%s/network" % sid)
        self.assertEqual(r.json()["allow_out"], ["allowed.test"])
        # Destroy removes the sandbox's chain, set and map element.
        table = "asb_" + self.hash
        self.assertIn(sid, sh("nft", "list", "table", "inet", table).stdout)
        self.server.request("DELETE", "/v1/sandboxes/" + sid)
        listing = sh("nft", "list", "table", "inet", table, check=False).stdout
        self.assertNotIn(sid, listing)
        self.assertNotIn("dns_" + sid[3:], listing)

    def e2b(self, method, path, body=None):
        """A call to E2B's control plane (docs/e2b.md), as the e2b SDK makes it."""
        return self.server.request(method, path, body, check=False)

    def e2b_create(self, **body):
        r = self.e2b("POST", "/sandboxes", dict({"templateID": "base"}, **body))
        self.assertEqual(r.status, 201, r)
        sid = r.json()["sandboxID"]
        self._e2b.append(sid)
        return sid

    def test_e2b_egress_rules(self):
        """E2B's network terms on the same enforcement (api/e2b_network.h): internet on by
        default, allowOut over denyOut, allow_internet_access false as all traffic denied,
        updateNetwork replacing every rule."""
        self._e2b = []
        try:
            # No network field: internet on (E2B's default), nothing denied.
            sid = self.e2b_create()
            self.assertTrue(self.server.request("GET", "/v1/sandboxes/" + sid).json()["network"])
            self.assertEqual(self.py(sid, PY_CONNECT, DENIED_IP, "80"), "connected")
            info = self.e2b("GET", "/sandboxes/" + sid).json()
            self.assertEqual((info["allowInternetAccess"], info["network"]),
                             (True, {"allowPublicTraffic": False}))
            # Only the allow list: all traffic denied, then allowOut wins.
            sid = self.e2b_create(network={"allowOut": ["allowed.test", PORTS_IP],
                                           "denyOut": ["0.0.0.0/0"]})
            self.assertEqual(self.py(sid, PY_RESOLVE, "allowed.test"), "resolved " + ALLOWED_IP)
            self.assertEqual(self.py(sid, PY_CONNECT, ALLOWED_IP, "80"), "connected")
            self.assertEqual(self.py(sid, PY_CONNECT, PORTS_IP, "8443"), "connected")
            self.assertTrue(self.py(sid, PY_RESOLVE, "denied.test").startswith("unresolved"))
            self.assertTrue(self.py(sid, PY_CONNECT, DENIED_IP, "80").startswith("refused"))
            info = self.e2b("GET", "/sandboxes/" + sid).json()
            self.assertEqual(info["network"], {"allowOut": ["allowed.test", PORTS_IP + "/32"],
                                               "denyOut": ["0.0.0.0/0"],
                                               "allowPublicTraffic": False})
            # An allowed address inside a denied range gets through; the rest of it does not.
            sid = self.e2b_create(network={"allowOut": [DENIED_IP],
                                           "denyOut": ["198.19.0.0/16"]})
            self.assertEqual(self.py(sid, PY_CONNECT, DENIED_IP, "80"), "connected")
            self.assertTrue(self.py(sid, PY_CONNECT, ALLOWED_IP, "80").startswith("refused"))
            self.assertTrue(self.py(sid, PY_CONNECT, PORTS_IP, "80").startswith("refused"))
            self.assertTrue(self.py(sid, PY_CONNECT, META_IP, "80").startswith("refused"))
            # allow_internet_access false: nothing out, no name resolves (no DNS channel
            # either), yet the sandbox has its network, so an update can open it.
            sid = self.e2b_create(allow_internet_access=False)
            self.assertTrue(self.py(sid, PY_CONNECT, ALLOWED_IP, "80").startswith("refused"))
            self.assertTrue(self.py(sid, PY_RESOLVE, "allowed.test").startswith("unresolved"))
            info = self.e2b("GET", "/sandboxes/" + sid).json()
            self.assertEqual((info["allowInternetAccess"], info["network"]),
                             (False, {"denyOut": ["0.0.0.0/0"], "allowPublicTraffic": False}))
            r = self.e2b("PUT", "/sandboxes/%s/network" % sid,
                         {"allowOut": ["allowed.test"], "denyOut": ["0.0.0.0/0"]})
            self.assertEqual(r.status, 204, r)
            self.assertEqual(self.py(sid, PY_RESOLVE, "allowed.test"), "resolved " + ALLOWED_IP)
            self.assertEqual(self.py(sid, PY_CONNECT, ALLOWED_IP, "80"), "connected")
            self.assertTrue(self.py(sid, PY_CONNECT, DENIED_IP, "80").startswith("refused"))
            # An update replaces every rule: omitted lists are cleared, so all is open.
            self.assertEqual(self.e2b("PUT", "/sandboxes/%s/network" % sid, {}).status, 204)
            self.assertEqual(self.py(sid, PY_CONNECT, DENIED_IP, "80"), "connected")
            self.assertEqual(self.e2b("GET", "/sandboxes/" + sid).json()["network"],
                             {"allowPublicTraffic": False})
            r = self.e2b("PUT", "/sandboxes/%s/network" % sid, {"allow_internet_access": False})
            self.assertEqual(r.status, 204, r)
            self.assertTrue(self.py(sid, PY_CONNECT, DENIED_IP, "80").startswith("refused"))
            # What E2B refuses, or we do not offer, is a 400 naming the field.
            for body, says in (({"network": {"denyOut": ["denied.test"]}}, "denyOut[0]"),
                               ({"network": {"allowOut": ["10.0.0.0/8:80"]}}, "allowOut[0]"),
                               ({"network": {"rules": {"a.test": [{}]}}}, "network.rules"),
                               ({"network": {"egressProxy": {"address": "p:1080"}}},
                                "network.egressProxy"),
                               ({"network": {"colour": "red"}}, "network.colour")):
                r = self.e2b("POST", "/sandboxes", dict({"templateID": "base"}, **body))
                self.assertEqual(r.status, 400, (body, r))
                self.assertIn(says, r.json()["message"])
            r = self.e2b("PUT", "/sandboxes/%s/network" % sid, {"denyOut": "0.0.0.0/0"})
            self.assertEqual(r.status, 400, r)
            r = self.e2b("PUT", "/sandboxes/sb_0000000000000000/network", {})
            self.assertEqual(r.status, 404, r)
        finally:
            for sid in self._e2b:
                self.e2b("DELETE", "/sandboxes/" + sid)

    def wait_port(self, sid, port, path="/"):
        deadline = time.time() + 10
        while True:
            r = self.server.request("GET", "/v1/sandboxes/%s/ports/%d%s" % (sid, port, path),
                                    check=False)
            if r.status != 503 or time.time() > deadline:
                return r
            time.sleep(0.1)

    def test_port_proxy_without_network(self):
        sid = self.create()["id"]
        self.server.run(sid, "mkdir -p /workspace/www && echo '<h1>dev server</h1>' > "
                             "/workspace/www/index.html")
        self.server.run(sid, "cd /workspace/www && setsid python3 -m http.server 8000 "
                             ">/dev/null 2>&1 &")
        r = self.wait_port(sid, 8000, "/index.html?x=1")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.body, b"<h1>dev server</h1>\n")
        self.assertTrue(r.headers["content-type"].startswith("text/html"), r.headers)
        root = self.server.request("GET", "/v1/sandboxes/%s/ports/8000/" % sid)
        self.assertEqual(root.body, b"<h1>dev server</h1>\n")
        # A redirect of the app stays behind the proxy (http.server: /dir -> /dir/).
        self.server.run(sid, "mkdir -p /workspace/www/sub")
        moved = self.server.request("GET", "/v1/sandboxes/%s/ports/8000/sub" % sid)
        self.assertEqual(moved.status, 301)
        self.assertEqual(moved.headers["location"], "/v1/sandboxes/%s/ports/8000/sub/" % sid)
        bare = self.server.request("GET", "/v1/sandboxes/%s/ports/8000" % sid, check=False)
        self.assertEqual(bare.status, 307)
        self.assertEqual(bare.headers["location"], "/v1/sandboxes/%s/ports/8000/" % sid)
        # The upstream's own answers pass through (http.server has no POST: 501).
        post = self.server.request("POST", "/v1/sandboxes/%s/ports/8000/x" % sid, b"data")
        self.assertEqual(post.status, 501)
        self.assertError(self.server.request("GET", "/v1/sandboxes/%s/ports/8009/" % sid,
                                             check=False), 503, "unavailable")
        for bad in ("0", "65536", "http"):
            self.assertError(self.server.request("GET", "/v1/sandboxes/%s/ports/%s/" % (sid, bad),
                                                 check=False), 400, "invalid_request")
        self.assertError(self.server.request("GET", "/v1/sandboxes/sb_0000000000000000/ports/"
                                             "8000/", check=False), 404, "not_found")

    def test_port_proxy_websocket_upgrade(self):
        sid = self.create()["id"]
        echo = (
            "import socket\n"
            "l=socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
            "l.bind(('127.0.0.1', 8001)); l.listen(1)\n"
            "c,_=l.accept(); h=b''\n"
            "while b'\\r\\n\\r\\n' not in h: h+=c.recv(1024)\n"
            "ok=b'upgrade: websocket' in h.lower() and b'x-api-key' not in h.lower()\n"
            "c.sendall(b'HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\n'"
            "b'Connection: Upgrade\\r\\n\\r\\n' + (b'hello:' if ok else b'bad:'))\n"
            "while True:\n"
            "    d=c.recv(1024)\n"
            "    if not d: break\n"
            "    c.sendall(d)\n")
        self.server.put_file(sid, "/workspace/echo.py", echo.encode())
        self.server.run(sid, "setsid python3 /workspace/echo.py >/dev/null 2>&1 &")
        deadline = time.time() + 10
        while True:
            c = socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
            c.sendall(("GET /v1/sandboxes/%s/ports/8001/ws HTTP/1.1\r\nHost: x\r\n"
                       "Upgrade: websocket\r\nConnection: Upgrade\r\nX-API-Key: secret\r\n"
                       "\r\n" % sid).encode())
            head = b""
            while b"\r\n\r\n" not in head:
                d = c.recv(4096)
                if not d:
                    break
                head += d
            if head.startswith(b"HTTP/1.1 101") or time.time() > deadline:
                break
            c.close()
            time.sleep(0.1)
        self.assertTrue(head.startswith(b"HTTP/1.1 101"), head)
        rest = head.split(b"\r\n\r\n", 1)[1]
        while len(rest) < len(b"hello:"):
            rest += c.recv(1024)
        self.assertEqual(rest, b"hello:")
        c.sendall(b"ping over the relay")
        got = b""
        while len(got) < len(b"ping over the relay"):
            d = c.recv(1024)
            if not d:
                break
            got += d
        self.assertEqual(got, b"ping over the relay")
        c.close()


if __name__ == "__main__":
    harness.main()
