// The TypeScript SDK against the REAL server (scripts/test.sh starts it through
// scripts/with_server.py and passes AGENT_SANDBOX_URL / AGENT_SANDBOX_API_KEY). Runs on the
// built output in dist/.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import {
  NotFoundError,
  defaultLanguage,
  Sandbox,
  SandboxAPIError,
  SandboxConnectionError,
  SandboxError,
} from "../dist/index.js";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PKG = path.dirname(HERE);
const URL_ = process.env.AGENT_SANDBOX_URL;
const KEY = process.env.AGENT_SANDBOX_API_KEY;
assert.ok(URL_ && KEY, "run through scripts/test.sh (it starts the server)");

const client = new Sandbox({ baseUrl: URL_, apiKey: KEY });
const created = [];
function session(opts) {
  const s = client.create(opts);
  created.push(s);
  return s;
}
after(async () => {
  for (const s of created) await s.destroy({ missingOk: true }).catch(() => {});
});

test("create, get, list, setTimeout, destroy", async () => {
  const spec = { cpus: 0.5, memoryMb: 256, timeoutSeconds: 60, env: { G: "1" } };
  const s = await session(spec).ready();
  assert.match(s.id, /^sb_[0-9a-f]{16}$/);
  assert.equal(s.info.status, "running");
  const got = await client.get(s.id);
  assert.deepEqual([got.info.cpus, got.info.memoryMb, got.info.timeoutSeconds], [0.5, 256, 60]);
  assert.deepEqual(got.info.envKeys, ["G"]);
  assert.deepEqual([got.info.defaultWorkdir, got.info.defaultUser], ["/workspace", "sandbox"]);
  assert.ok((await client.list()).some((x) => x.id === s.id));
  const before = Date.parse(s.info.expiresAt);
  const info = await s.setTimeout(600);
  assert.ok(Date.parse(info.expiresAt) > before + 500_000);
  await s.destroy();
  await assert.rejects(
    client.get(s.id),
    (e) => e instanceof NotFoundError && e.code === "not_found" && e.statusCode === 404,
  );
  await assert.rejects(s.destroy(), NotFoundError);
  await s.destroy({ missingOk: true });
});

test("exec: shell, argv with args, env, cwd, stdin, timeout, seed A output", async () => {
  const s = session({ env: { A: "1" } });
  let r = await s.exec("echo hi; echo err >&2");
  assert.deepEqual([r.stdout, r.stderr, r.exitCode, r.ok], ["hi\n", "err\n", 0, true]);
  assert.deepEqual(r.output, [{ type: "stdout", data: "hi\n" }, { type: "stderr", data: "err\n" }]);
  r = await s.exec(["sh", "-c", "exit 2"]);
  assert.deepEqual([r.exitCode, r.ok], [2, false]);
  r = await s.run("printf", { args: ["%s\n", "a b", "$HOME"] });
  assert.equal(r.stdout, "a b\n$HOME\n");
  r = await s.exec("echo $A $B; pwd", { env: { B: "2" }, cwd: "/tmp" });
  assert.equal(r.stdout, "1 2\n/tmp\n");
  r = await s.exec("cat", { stdin: "from stdin" });
  assert.equal(r.stdout, "from stdin");
  r = await s.exec("sleep 30; echo never", { timeoutSeconds: 1 });
  assert.equal(r.timedOut, true);
  assert.equal(r.ok, false);
  assert.ok(!r.stdout.includes("never"));
});

test("execStream: typed events in order, split UTF-8 whole, error event on destroy", async () => {
  const s = session();
  const events = [];
  for await (const ev of s.execStream(
    "echo one; sleep 0.2; echo two >&2; printf 'h\\303'; sleep 0.2; printf '\\251\\n'; exit 3",
  )) {
    events.push(ev);
  }
  const last = events.at(-1);
  assert.equal(last.type, "exit");
  assert.equal(last.exitCode, 3);
  assert.equal(last.ok, false);
  const outs = events.slice(0, -1);
  assert.ok(outs.every((e) => e.type === "stdout" || e.type === "stderr"));
  const text = (type) => outs.filter((e) => e.type === type).map((e) => e.data).join("");
  assert.equal(text("stdout"), "one\nh\u00e9\n");
  assert.equal(text("stderr"), "two\n");
  assert.deepEqual(outs.slice(0, 2).map((e) => e.type), ["stdout", "stderr"]);

  const s2 = await session().ready();
  const it = s2.execStream("echo started; sleep 60")[Symbol.asyncIterator]();
  const first = await it.next();
  assert.deepEqual(first.value, { type: "stdout", data: "started\n" });
  await s2.destroy();
  const rest = [];
  for (let n = await it.next(); !n.done; n = await it.next()) rest.push(n.value);
  assert.equal(rest.length, 1, JSON.stringify(rest));
  assert.ok(rest[0].type === "error" || (rest[0].type === "exit" && !rest[0].ok));

  const gone = await client.get(s.id);
  await gone.destroy();
  await assert.rejects(async () => {
    for await (const _ of gone.execStream("true"));
  }, NotFoundError);
});

test("runCode: python, sh, javascript, unknown language", async () => {
  const s = session();
  let r = await s.runCode("import sys\nprint(sum(range(10)), sys.version_info[0])");
  assert.deepEqual([r.ok, r.stdout], [true, "45 3\n"]);
  assert.equal(r.output[0].data, "45 3\n");
  r = await s.runCode("x=4\necho $((x*x))\nexit 5", "sh");
  assert.deepEqual([r.exitCode, r.stdout], [5, "16\n"]);
  r = await s.runCode("console.log(1+1)", "javascript");
  if (r.ok) assert.equal(r.stdout, "2\n");
  else assert.equal(r.exitCode, 127); // node is not in the base template
  await assert.rejects(s.runCode("x", "cobol"), TypeError);
  // No language: picked from the template (base lists python3 among its tools).
  assert.equal(await s.defaultLanguage(), "python");
  r = await s.runCode("print(6 * 7)");
  assert.deepEqual([r.ok, r.stdout], [true, "42\n"]);
});

test("templates: list, get, defaultLanguage", async () => {
  const c = client;
  const ts = await c.listTemplates();
  const base = ts.find((t) => t.name === "base");
  assert.ok(base, JSON.stringify(ts));
  assert.ok(base.tools.includes("python3"));
  assert.ok(base.resources.memoryMb > 0);
  assert.equal((await c.getTemplate("base")).name, "base");
  await assert.rejects(c.getTemplate("no-such-template"), NotFoundError);
  assert.equal(defaultLanguage("node"), "javascript");
  assert.equal(defaultLanguage("go"), "go");
  assert.equal(defaultLanguage("custom", ["bash", "node"]), "javascript");
  assert.equal(defaultLanguage("custom"), "python");
});

test("files: binary round trip, empty, modes, listing, errors", async () => {
  const s = session();
  const blob = new Uint8Array([...Array(256).keys(), 0, 0xff, 0xfe, ...randomBytes(4096)]);
  const w = await s.writeFile("data/blob.bin", blob);
  assert.deepEqual([w.path, w.size], ["/workspace/data/blob.bin", blob.length]);
  assert.deepEqual((await s.readFile("data/blob.bin")).content, blob);
  const { content } = await s.readFile("/workspace/data/blob.bin");
  assert.ok(content instanceof Uint8Array);
  assert.deepEqual(content, blob);
  await s.writeFile("empty", "");
  assert.equal((await s.readFile("empty")).content.length, 0);
  await s.writeFile("run.sh", "#!/bin/sh\necho ran \u00e9\n", { mode: 0o755 });
  assert.equal(await s.readText("run.sh"), "#!/bin/sh\necho ran \u00e9\n");
  assert.equal((await s.exec("./run.sh")).stdout, "ran \u00e9\n");
  await s.writeFile("ro.txt", "x", { mode: "600" });
  await s.exec("ln -s blob.bin data/link && mkdir -p .hidden");
  const list = await s.listFiles();
  const names = list.map((f) => f.name);
  assert.deepEqual(names, [...names].sort());
  const byName = Object.fromEntries(list.map((f) => [f.name, f]));
  assert.equal(byName.data.type, "dir");
  assert.ok(byName[".hidden"]);
  assert.equal(byName["run.sh"].mode, 0o755);
  assert.equal(byName["ro.txt"].mode, 0o600);
  const sub = Object.fromEntries((await s.listFiles("data")).map((f) => [f.name, f]));
  assert.equal(sub["blob.bin"].size, blob.length);
  assert.deepEqual([sub.link.type, sub.link.linkTarget], ["symlink", "blob.bin"]);
  const deep = (await s.listFiles("/workspace", { recursive: true })).map((f) => f.path);
  assert.ok(deep.includes("/workspace/data/blob.bin"));
  await assert.rejects(s.readFile("missing.txt"), NotFoundError);
  await assert.rejects(
    s.writeFile("/etc/x", "no"),
    (e) => e instanceof SandboxAPIError && e.statusCode === 400 && e.code === "invalid_request",
  );
  await assert.rejects(s.readFile("data"), (e) => e.statusCode === 400);
});

test("uploadDir / downloadDir", async () => {
  const s = session();
  const src = await fs.mkdtemp(path.join(os.tmpdir(), "asb-sdk-src-"));
  const dst = await fs.mkdtemp(path.join(os.tmpdir(), "asb-sdk-dst-"));
  try {
    await fs.mkdir(path.join(src, "pkg", "sub"), { recursive: true });
    await fs.writeFile(path.join(src, "pkg", "a.bin"), Buffer.from([0, 1, 0x62, 0xff]));
    const script = path.join(src, "pkg", "sub", "run.sh");
    await fs.writeFile(script, "#!/bin/sh\necho sub\n", { mode: 0o755 });
    await fs.writeFile(path.join(src, ".env"), "K=V\n");
    const long = "d".repeat(60) + "/" + "f".repeat(70) + ".txt"; // > 100 bytes: a pax name
    await fs.mkdir(path.join(src, "d".repeat(60)));
    await fs.writeFile(path.join(src, long), "long name");
    await fs.symlink("pkg/a.bin", path.join(src, "link"));
    await s.uploadDir(src, "/workspace/proj");
    const abin = new Uint8Array([0, 1, 0x62, 0xff]);
    assert.deepEqual((await s.readFile("proj/pkg/a.bin")).content, abin);
    assert.equal((await s.exec("./proj/pkg/sub/run.sh")).stdout, "sub\n");
    assert.equal((await s.exec("readlink proj/link")).stdout, "pkg/a.bin\n");
    assert.equal(await s.readText("proj/" + long), "long name");
    await s.writeFile("proj/made-inside.txt", "inside");
    const n = await s.downloadDir("/workspace/proj", dst);
    assert.ok(n >= 7, String(n));
    assert.deepEqual(new Uint8Array(await fs.readFile(path.join(dst, "pkg", "a.bin"))), abin);
    assert.equal(await fs.readFile(path.join(dst, "made-inside.txt"), "utf8"), "inside");
    assert.equal(await fs.readFile(path.join(dst, ".env"), "utf8"), "K=V\n");
    assert.equal(await fs.readFile(path.join(dst, long), "utf8"), "long name");
    await fs.access(path.join(dst, "pkg", "sub", "run.sh"), fs.constants.X_OK);
    assert.equal(await fs.readlink(path.join(dst, "link")), "pkg/a.bin");
    await assert.rejects(s.downloadDir("/workspace/nope", dst), NotFoundError);
  } finally {
    await fs.rm(src, { recursive: true, force: true });
    await fs.rm(dst, { recursive: true, force: true });
  }
});

test("snapshot, rollback, fork", async () => {
  const s = session();
  await s.writeFile("state.txt", "v1");
  const snap = await s.snapshot("first");
  try {
    assert.deepEqual([snap.sandboxId, snap.name], [s.id, "first"]);
    assert.equal((await client.getSnapshot(snap.id)).id, snap.id);
    assert.ok((await client.listSnapshots(s.id)).some((x) => x.id === snap.id));
    await s.writeFile("state.txt", "v2");
    await s.writeFile("later.txt", "later");
    const info = await s.rollback(snap);
    assert.equal(info.status, "running");
    assert.equal(await s.readText("state.txt"), "v1");
    await assert.rejects(s.readFile("later.txt"), NotFoundError);
    const forked = await client.fork(snap.id);
    created.push(forked);
    assert.notEqual(forked.id, s.id);
    assert.equal(forked.info.sourceSnapshotId, snap.id);
    assert.equal(await forked.readText("state.txt"), "v1");
    await forked.writeFile("state.txt", "fork");
    assert.equal(await s.readText("state.txt"), "v1");
    await assert.rejects(client.fork("snap_0000000000000000"), NotFoundError);
    await assert.rejects(s.rollback("snap_0000000000000000"), NotFoundError);
  } finally {
    await client.deleteSnapshot(snap).catch(() => {});
  }
  await assert.rejects(client.getSnapshot(snap.id), NotFoundError);
});

test("typed errors", async () => {
  const bad = client.create({ cpus: -1 });
  await assert.rejects(bad.ready(), (e) =>
    e instanceof SandboxAPIError && !(e instanceof NotFoundError) && e instanceof SandboxError &&
    e.statusCode === 400 && e.code === "invalid_request" && e.message.includes("cpus"));
  await assert.rejects(bad.exec("true"), SandboxAPIError); // the create error, again
  await assert.rejects(
    client.create({ template: "no-such-template" }).ready(),
    (e) => e.statusCode === 400,
  );
  await assert.rejects(
    client.get("sb_0123456789abcdef"),
    (e) => e instanceof NotFoundError && e.code === "not_found",
  );
  const wrongKey = new Sandbox({ baseUrl: URL_, apiKey: "asb_" + "0".repeat(48) });
  await assert.rejects(
    wrongKey.list(),
    (e) => e instanceof SandboxAPIError && e.statusCode === 401 && e.code.length > 0,
  );
  const down = new Sandbox({ baseUrl: "http://127.0.0.1:1", apiKey: KEY });
  await assert.rejects(down.list(), SandboxConnectionError);
  assert.throws(() => new Sandbox({ baseUrl: "ftp://x" }), TypeError);
});

test("configuration from the environment", async () => {
  const saved = { u: process.env.AGENT_SANDBOX_URL, k: process.env.AGENT_SANDBOX_API_KEY };
  try {
    const c = new Sandbox();
    assert.equal(c.baseUrl, URL_);
    assert.ok(Array.isArray(await c.list()));
    process.env.AGENT_SANDBOX_API_KEY = "asb_" + "1".repeat(48);
    await assert.rejects(new Sandbox().list(), (e) => e.statusCode === 401);
    delete process.env.AGENT_SANDBOX_API_KEY;
    await assert.rejects(new Sandbox().list(), (e) => e.statusCode === 401);
    process.env.AGENT_SANDBOX_URL = "http://127.0.0.1:1";
    assert.ok(Array.isArray(await new Sandbox({ baseUrl: URL_, apiKey: KEY }).list()));
  } finally {
    process.env.AGENT_SANDBOX_URL = saved.u;
    process.env.AGENT_SANDBOX_API_KEY = saved.k;
  }
});

test("README examples run as written", async () => {
  const readme = await fs.readFile(path.join(PKG, "README.md"), "utf8");
  const blocks = [...readme.matchAll(/```(?:js|javascript)\n([\s\S]*?)```/g)].map((m) => m[1]);
  assert.ok(blocks.length >= 2);
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "asb-sdk-readme-"));
  try {
    // The examples import "@agent-sandbox/sdk" as users do: resolve it to this package.
    await fs.mkdir(path.join(dir, "node_modules", "@agent-sandbox"), { recursive: true });
    await fs.symlink(PKG, path.join(dir, "node_modules", "@agent-sandbox", "sdk"));
    for (const [i, code] of blocks.entries()) {
      const file = path.join(dir, `example${i}.mjs`);
      await fs.writeFile(file, code);
      try {
        await promisify(execFile)(process.execPath, [file], { cwd: dir, timeout: 300_000 });
      } catch (e) {
        assert.fail(`README block ${i} failed:\n${code}\n${e.stdout}\n${e.stderr}`);
      }
    }
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
  const ours = new Set(created.map((c) => c.id));
  const left = (await client.list()).map((x) => x.id).filter((id) => !ours.has(id));
  assert.deepEqual(left, [], "README examples left sandboxes behind");
});
