// The TypeScript SDK against the REAL server (scripts/test.sh starts it through
// scripts/with_server.py and passes AGENT_SANDBOX_URL / AGENT_SANDBOX_API_KEY). Runs on the
// built output in dist/.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import http from "node:http";
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
  StreamError,
  ProcessHandle,
  Result,
  FileWatch,
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
  const filtered = await client.list({ order: "desc", template: "base", status: "running",
    startedAfter: new Date(Date.parse(s.info.createdAt)) });
  assert.ok(filtered.some((x) => x.id === s.id));
  assert.ok(!(await client.list({ startedBefore: s.info.createdAt })).some((x) => x.id === s.id));
  await assert.rejects(client.list({ order: "sideways" }),
    (e) => e instanceof SandboxAPIError && e.statusCode === 400);
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

test("pause and resume: 409 while paused, state kept, resume's timeoutSeconds", async () => {
  const s = await session({ timeoutSeconds: 120 }).ready();
  assert.deepEqual([s.info.autoPause, s.info.pausedAt], [false, null]);
  await s.writeFile("kept.txt", "kept");
  const proc = await s.startProcess("sleep 600");
  let before = Date.now();
  const paused = await s.pause();
  assert.equal(paused.status, "paused");
  assert.equal(s.status, "paused");
  assert.ok(Math.abs(Date.parse(paused.pausedAt) - before) < 5_000, paused.pausedAt);
  // While paused, expiresAt is when the paused sandbox is destroyed (default one day).
  assert.ok(Math.abs(Date.parse(s.expiresAt) - (before + 86_400_000)) < 60_000, s.expiresAt);
  assert.equal((await client.get(s.id)).status, "paused");
  const isPausedConflict = (e) =>
    e instanceof SandboxAPIError &&
    !(e instanceof NotFoundError) &&
    e.statusCode === 409 &&
    e.code === "conflict" &&
    /paused: resume it first/.test(e.message);
  await assert.rejects(s.exec("true"), isPausedConflict);
  await assert.rejects(s.readText("kept.txt"), isPausedConflict);
  await assert.rejects(s.listProcesses(), isPausedConflict);
  await assert.rejects(
    s.pause(),
    (e) => e instanceof SandboxAPIError && e.statusCode === 409 && /already paused/.test(e.message),
  );

  before = Date.now();
  const resumed = await s.resume(); // its last TTL (120 s), from now
  assert.deepEqual([resumed.status, resumed.pausedAt, s.status], ["running", null, "running"]);
  assert.ok(Math.abs(Date.parse(s.expiresAt) - (before + 120_000)) < 30_000, s.expiresAt);
  assert.equal((await s.exec("cat kept.txt")).stdout, "kept");
  assert.equal((await s.getProcess(proc.pid)).state, "running"); // kept across the pause
  await assert.rejects(
    s.resume(),
    (e) => e instanceof SandboxAPIError && e.statusCode === 409 && e.code === "conflict",
  );

  await s.pause();
  before = Date.now();
  const info = await s.resume({ timeoutSeconds: 900 });
  assert.equal((await s.refresh()).status, "running");
  assert.ok(Math.abs(Date.parse(info.expiresAt) - (before + 900_000)) < 30_000, info.expiresAt);
  assert.equal(info.timeoutSeconds, 900);
  assert.ok((await s.exec("true")).ok);
  // Files only: the processes end, the workspace stays, the resume starts it afresh.
  const filesOnly = await s.pause({ keepMemory: false });
  assert.deepEqual([filesOnly.status, filesOnly.pausedMemory], ["paused", false]);
  assert.equal((await s.resume()).pausedMemory, null);
  assert.equal((await s.exec("cat kept.txt")).stdout, "kept");
  assert.equal((await s.exec("pgrep -c sleep || true")).stdout, "0\n");
  assert.equal((await s.pause()).pausedMemory, true);
  await s.resume({ keepMemory: false }); // a reboot: nothing of before runs on
  await s.pause();
  await assert.rejects(
    s.resume({ timeoutSeconds: 0 }),
    (e) => e instanceof SandboxAPIError && e.statusCode === 400,
  );
  assert.equal((await s.refresh()).status, "paused");
  await s.destroy(); // a paused sandbox can be destroyed
});

test("autoPause: round-trips and pauses at the TTL instead of destroying", { timeout: 60_000 }, async () => {
  const s = await session({ autoPause: true, timeoutSeconds: 2 }).ready();
  assert.equal(s.info.autoPause, true);
  assert.equal((await client.get(s.id)).info.autoPause, true);
  const plain = await session().ready();
  assert.equal(plain.info.autoPause, false);
  await plain.destroy(); // the suite's sandboxes stay until after(): keep under the server's limit
  const deadline = Date.now() + 30_000;
  while ((await s.refresh()).status === "running" && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 500));
  }
  assert.equal(s.status, "paused"); // not destroyed
  assert.ok(s.info.pausedAt);
  const info = await s.resume({ timeoutSeconds: 300 });
  assert.deepEqual([info.status, info.autoPause], ["running", true]);
  assert.ok((await s.exec("true")).ok);
  await s.destroy();
});

test("seed B's names: health, image, readOnlyRootfs, listSandboxes, status/image/data", async () => {
  const h = await client.health();
  assert.deepEqual([h.status, h.backend], ["ok", "ns"]);
  assert.ok(h.version);
  const s = await session({ image: "base", readOnlyRootfs: true, timeoutSeconds: 600 }).ready();
  assert.deepEqual([s.status, s.image, s.info.template], ["running", "base", "base"]);
  assert.ok(Math.abs(Date.parse(s.expiresAt) - (Date.now() + 600_000)) < 60_000, s.expiresAt);
  assert.equal(s.data.id, s.id);
  assert.equal(s.data.read_only_rootfs, true);
  assert.ok((await client.listSandboxes()).some((x) => x.id === s.id && x.image === "base"));
  await assert.rejects(
    session({ readOnlyRootfs: false }).ready(),
    (e) => e instanceof SandboxAPIError && e.statusCode === 400 && /read_only_rootfs/.test(e.message),
  );
  assert.throws(() => client.create({ image: "base", template: "go" }), TypeError);
  const w = await s.writeFile("notes.md", "draft");
  assert.deepEqual([w.name, w.path, w.type, w.size], ["notes.md", "/workspace/notes.md", "file", 5]);
  const [f] = (await s.listFiles()).filter((x) => x.name === "notes.md");
  assert.equal(f.modifiedAt, f.mtime);
  const r = await s.exec("sleep 30", { timeoutSeconds: 0.5 });
  assert.equal(r.timedOut, true);
  const snap = await s.snapshot("draft");
  assert.deepEqual([snap.image, snap.template], ["base", "base"]);
  await client.deleteSnapshot(snap);
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

test("backends(), and a create that names one", async () => {
  const listed = await client.backends();
  assert.equal(listed.default, "ns");
  const names = listed.backends.map((b) => b.name);
  assert.equal(names[0], "ns");
  assert.ok(names.includes("microvm"), names); // available or not, with the reason
  const s = await session({ backend: "ns" }).ready();
  assert.deepEqual([s.info.backend, (await client.get(s.id)).info.backend], ["ns", "ns"]);
  await s.destroy(); // the suite's server admits 20 at once; later tests need the room
  await assert.rejects(
    session({ backend: "firecracker" }).ready(),
    (e) => e instanceof SandboxAPIError && e.statusCode === 400 && /firecracker/.test(e.message),
  );
});

test("create with idempotencyKey: a retry returns the same sandbox, other options 409", async () => {
  const key = "ts-" + randomBytes(8).toString("hex");
  const a = await session({ timeoutSeconds: 300, idempotencyKey: key }).ready();
  const b = await session({ timeoutSeconds: 300, idempotencyKey: key }).ready();
  assert.equal(b.id, a.id);
  await assert.rejects(
    session({ timeoutSeconds: 301, idempotencyKey: key }).ready(),
    (e) => e instanceof SandboxAPIError && e.statusCode === 409 && e.code === "conflict",
  );
});

test("exec: maxOutputBytes caps each stream, with its own flag", async () => {
  const s = session();
  const r = await s.exec("head -c 500 /dev/zero; echo 'what went wrong' >&2", {
    maxOutputBytes: 100,
  });
  assert.equal(r.stdout.length, 100);
  assert.equal(r.stderr, "what went wrong\n");
  assert.deepEqual([r.truncated, r.stdoutTruncated, r.stderrTruncated], [true, true, false]);
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

// ---- background processes (ADR 0011) ---------------------------------------------------------

const T60 = { timeout: 60_000 }; // a lost exit fails the test instead of hanging the suite

test("processes: stream is live, both lines, exit code; wait with callbacks", T60, async () => {
  const s = session();
  const p = await s.startProcess("echo a; sleep 1; echo b", { tag: "ab" });
  assert.ok(p instanceof ProcessHandle);
  assert.ok(Number.isInteger(p.pid) && p.pid > 1, String(p.pid));
  assert.deepEqual([p.info.state, p.info.tag, p.info.command, p.info.exitCode], [
    "running", "ab", "echo a; sleep 1; echo b", null,
  ]);
  const events = [];
  let stateAtA;
  // replayBytes: "a" may be written before the stream is attached.
  for await (const ev of p.stream({ replayBytes: 1024 })) {
    events.push(ev);
    if (ev.type === "stdout" && ev.data.includes("a") && stateAtA === undefined) {
      stateAtA = (await s.getProcess(p.pid)).state; // live: "a" arrives before the end
    }
  }
  const out = events.filter((e) => e.type === "stdout").map((e) => e.data).join("");
  assert.equal(out, "a\nb\n");
  assert.equal(stateAtA, "running");
  assert.deepEqual(events.at(-1), { type: "exit", exitCode: 0, signal: 0, ok: true });
  const done = await p.refresh();
  assert.deepEqual([done.state, done.exitCode, done.outputBytes], ["exited", 0, 4]);
  assert.ok(Date.parse(done.endedAt) >= Date.parse(done.startedAt) + 900);

  // wait(): exit code, output to callbacks (replayed), stdout and stderr apart.
  const q = await s.startProcess(["sh", "-c", "echo out; sleep 0.3; echo err >&2; exit 3"]);
  let stdout = "";
  let stderr = "";
  const exit = await q.wait({
    replayBytes: 4096,
    onStdout: (d) => (stdout += d),
    onStderr: (d) => (stderr += d),
  });
  assert.deepEqual(exit, { exitCode: 3, signal: 0, ok: false });
  assert.deepEqual([stdout, stderr], ["out\n", "err\n"]);
  // An exited process: wait() and stream() answer at once.
  assert.deepEqual(await s.waitProcess(q.pid), exit);
  const again = [];
  for await (const ev of s.process(q.pid).stream()) again.push(ev);
  assert.deepEqual(again, [{ type: "exit", exitCode: 3, signal: 0, ok: false }]);
  const listed = await s.listProcesses();
  assert.deepEqual(listed.map((x) => [x.pid, x.tag, x.state]), [
    [p.pid, "ab", "exited"],
    [q.pid, "", "exited"],
  ]);
  assert.deepEqual(listed[1].argv, ["sh", "-c", "echo out; sleep 0.3; echo err >&2; exit 3"]);
});

test("processes: stdin round trip through cat (text and bytes), EOF ends it", T60, async () => {
  const s = session();
  const p = await s.startProcess("cat", { stdin: true });
  assert.equal(p.info.stdinOpen, true);
  // The stream attaches at its first next(): replayBytes keeps what cat wrote before that.
  const it = p.stream({ replayBytes: 1024 })[Symbol.asyncIterator]();
  assert.equal(await p.writeStdin("hello\n"), 6);
  let got = "";
  while (!got.includes("hello\n")) {
    const n = await it.next();
    assert.ok(!n.done && n.value.type === "stdout", JSON.stringify(n.value));
    got += n.value.data;
  }
  assert.equal(got, "hello\n"); // echoed while cat still runs
  assert.equal(await p.writeStdin(new Uint8Array([0xc3, 0xa9, 0x0a])), 3); // "é\n", base64
  await p.closeStdin();
  const rest = [];
  for (let n = await it.next(); !n.done; n = await it.next()) rest.push(n.value);
  assert.deepEqual(rest.at(-1), { type: "exit", exitCode: 0, signal: 0, ok: true });
  assert.equal(rest.slice(0, -1).map((e) => e.data).join(""), "\u00e9\n");
  const info = await p.refresh();
  assert.deepEqual([info.stdinOpen, info.outputBytes], [false, 9]);
  await assert.rejects(
    p.writeStdin("late"),
    (e) => e instanceof SandboxAPIError && e.statusCode === 409,
  );
  const noStdin = await s.startProcess("sleep 30");
  await assert.rejects(noStdin.writeStdin("x"), (e) => e.statusCode === 409);
  await noStdin.kill();
});

test("processes: kill and signals end them by signal; PTY resize", T60, async () => {
  const s = session();
  const p = await s.startProcess("sleep 100");
  const waiting = p.wait();
  const t0 = Date.now();
  const killed = await p.kill();
  assert.deepEqual([killed.state, killed.signal, killed.exitCode], ["exited", 9, 137]);
  assert.deepEqual(await waiting, { exitCode: 137, signal: 9, ok: false });
  assert.ok(Date.now() - t0 < 10_000);
  assert.equal(p.info.state, "exited");

  // Detaching (a break, an aborted wait) leaves the process running.
  const t = await s.startProcess(["sh", "-c", "echo up; exec sleep 100"]);
  for await (const ev of t.stream({ replayBytes: 100 })) {
    assert.deepEqual(ev, { type: "stdout", data: "up\n" });
    break;
  }
  const t1 = Date.now();
  await assert.rejects(
    t.wait({ signal: AbortSignal.timeout(300) }),
    (e) => e.name === "TimeoutError",
  );
  assert.ok(Date.now() - t1 < 5000);
  assert.equal((await t.refresh()).state, "running");
  await s.signalProcess(t.pid, "term"); // SIG optional, any case
  assert.deepEqual(await t.wait(), { exitCode: 143, signal: 15, ok: false });
  // argv, not "sleep 100": dash (sh -c) catches a SIGINT that arrives before it has exec'd
  // the command and then runs it anyway, so a signal right after the start could be lost.
  const n = await s.startProcess(["sleep", "100"]);
  await assert.rejects(
    s.signalProcess(n.pid, "SIGNOPE"),
    (e) => e instanceof SandboxAPIError && e.statusCode === 400 && e.code === "invalid_request",
  );
  await n.signal(2);
  assert.equal((await n.wait()).signal, 2);

  // A PTY: stty sees the size given at start, then the resized one.
  const tty = await s.startProcess("sh", { pty: true, cols: 100, rows: 30 });
  assert.equal(tty.info.pty, true);
  const it = tty.stream({ replayBytes: 65536 })[Symbol.asyncIterator]();
  let screen = "";
  const until = async (text) => {
    while (!screen.includes(text)) {
      const x = await it.next();
      assert.ok(!x.done && x.value.type !== "exit", `waiting for ${text}: ${screen}`);
      if (x.value.type === "stdout") screen += x.value.data;
    }
  };
  await tty.writeStdin("stty size\n");
  await until("30 100");
  await tty.resize(120, 40);
  await tty.writeStdin("stty size; exit 4\n");
  await until("40 120");
  let last;
  for (let x = await it.next(); !x.done; x = await it.next()) last = x.value;
  assert.deepEqual(last, { type: "exit", exitCode: 4, signal: 0, ok: false });
  await assert.rejects(tty.resize(10001, 40), (e) => e.statusCode === 400);
  await assert.rejects(p.resize(80, 24), (e) => e instanceof SandboxAPIError);
});

test("processes: unknown pid is a 404 in the one error shape; bad arguments", T60, async () => {
  const s = await session().ready();
  const notFound = (e) =>
    e instanceof NotFoundError && e.statusCode === 404 && e.code === "not_found" &&
    e.message.includes("999999");
  await assert.rejects(s.getProcess(999999), notFound);
  await assert.rejects(s.killProcess(999999), notFound);
  await assert.rejects(s.writeStdin(999999, "x"), notFound);
  await assert.rejects(s.signalProcess(999999), notFound);
  await assert.rejects(s.process(999999).wait(), notFound);
  await assert.rejects(async () => {
    for await (const _ of s.streamProcess(999999));
  }, notFound);
  // The raw answer is the one error shape {"error":{"code","message"}}.
  const res = await fetch(`${URL_}/v1/sandboxes/${s.id}/processes/999999`, {
    headers: { Authorization: `Bearer ${KEY}` },
  });
  assert.equal(res.status, 404);
  const body = await res.json();
  assert.deepEqual(Object.keys(body), ["error"]);
  assert.deepEqual(Object.keys(body.error).sort(), ["code", "message"]);
  assert.equal(body.error.code, "not_found");

  assert.throws(() => s.process(0), TypeError);
  await assert.rejects(s.getProcess(1.5), TypeError);
  await assert.rejects(s.startProcess("true", { ringBytes: 4194305 }), (e) => e.statusCode === 400);
  // A missing cwd is a bad field (invalid_request, 400), never "sandbox gone" (ADR 0016).
  await assert.rejects(s.startProcess("true", { cwd: "/workspace/nope" }),
    (e) => e instanceof SandboxAPIError && !(e instanceof NotFoundError) && e.statusCode === 400 &&
      e.code === "invalid_request");
  // Limits at the boundary: 4 MiB of ring and of replay, 10000 cells of terminal.
  const p = await s.startProcess("echo x", { ringBytes: 4194304 });
  await assert.rejects(async () => {
    for await (const _ of p.stream({ replayBytes: 4194305 }));
  }, (e) => e instanceof SandboxAPIError && e.statusCode === 400);
  let replayed = "";
  const ended = await p.wait({ replayBytes: 4194304, onStdout: (d) => (replayed += d) });
  assert.deepEqual([ended, replayed], [{ exitCode: 0, signal: 0, ok: true }, "x\n"]);
  const big = await s.startProcess(["sleep", "100"], { pty: true, cols: 10000, rows: 10000 });
  await big.resize(10000, 1);
  await assert.rejects(big.resize(1, 10001), (e) => e.statusCode === 400);
  await assert.rejects(big.resize(0, 24), (e) => e.statusCode === 400);
  await assert.rejects(
    s.startProcess("true", { pty: true, cols: 10001 }),
    (e) => e.statusCode === 400,
  );
  await big.kill();

  // A process whose sandbox is destroyed while waiting: the wait ends (an error event or an
  // exit by signal), never hangs.
  const s2 = await session().ready();
  const long = await s2.startProcess("sleep 100");
  const waiting = long.wait().then(
    (x) => x,
    (e) => e,
  );
  await new Promise((r) => setTimeout(r, 200));
  await s2.destroy();
  const end = await waiting;
  assert.ok(
    end instanceof StreamError || end instanceof SandboxConnectionError || end.ok === false,
    String(end),
  );
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

// ---- code interpreter ------------------------------------------------------------------------

/** A session of `template`, or null (the test skips with the reason) when it is not built. */
async function codeSession(t, template) {
  try {
    await client.getTemplate(template);
  } catch (e) {
    if (!(e instanceof NotFoundError)) throw e;
    t.skip(`template ${template} is not built (agent-sandbox template build ${template})`);
    return null;
  }
  return session({ template, timeoutSeconds: 600 });
}

const T180 = { timeout: 180_000 };

test("code contexts: state persists across calls, contexts are isolated", T180, async (t) => {
  const s = await codeSession(t, "python");
  if (!s) return;
  const a = await s.createCodeContext("python");
  const b = await s.createCodeContext("python", { cwd: "/tmp" });
  assert.match(a.id, /^ctx_[0-9a-f]{16}$/);
  assert.deepEqual([a.language, a.cwd, a.state, a.default], ["python", "/workspace", "running", false]);
  assert.ok(a.pid > 0 && a.createdAt);
  assert.equal(b.cwd, "/tmp");
  assert.equal((await s.runCode("x = 40", undefined, { context: a })).ok, true);
  assert.equal((await s.runCode("x += 1", undefined, { context: a.id })).ok, true);
  const r = await s.runCode("x + 1", undefined, { context: a });
  assert.deepEqual([r.status, r.text, r.executionCount, r.contextId, r.error], ["ok", "42", 3, a.id, null]);
  assert.ok(r.results[0] instanceof Result);
  assert.equal(r.results[0].isMainResult, true);
  // env of one run: set for it, put back after it.
  const withEnv = await s.runCode("import os; os.environ['ONE_RUN']", undefined,
    { context: a, env: { ONE_RUN: "yes" } });
  assert.equal(withEnv.text, "'yes'");
  assert.equal((await s.runCode("os.environ.get('ONE_RUN', 'gone')", undefined, { context: a })).text,
    "'gone'");
  const rb = await s.runCode("x", "python", { context: b });
  assert.deepEqual([rb.status, rb.error.name], ["error", "NameError"]);
  assert.deepEqual((await s.listCodeContexts()).map((c) => c.id).sort(), [a.id, b.id].sort());
  assert.equal((await s.getCodeContext(a.id)).id, a.id);
  await s.deleteCodeContext(b);
  await assert.rejects(s.getCodeContext(b), NotFoundError);
  await assert.rejects(s.createCodeContext("cobol"), (e) => e instanceof SandboxAPIError && e.statusCode === 400);
  // Without a context the one-shot form is unchanged.
  const one = await s.runCode("print(1 + 1)", "python");
  assert.deepEqual([one.stdout, one.exitCode], ["2\n", 0]);
});

test("code: matplotlib gives png bytes and a line chart; errors are typed", T180, async (t) => {
  const s = await codeSession(t, "python");
  if (!s) return;
  const ctx = await s.createCodeContext();
  const r = await s.runCode(
    "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [2, 4, 8], label='growth')\n" +
      "plt.title('Growth')\nplt.show()",
    undefined,
    { context: ctx },
  );
  assert.equal(r.status, "ok", JSON.stringify(r));
  const figs = r.results.filter((x) => x.png !== undefined);
  assert.equal(figs.length, 1);
  assert.ok(figs[0].png instanceof Uint8Array);
  assert.deepEqual([...figs[0].png.slice(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  assert.deepEqual([figs[0].chart.type, figs[0].chart.title], ["line", "Growth"]);
  assert.ok(figs[0].formats().includes("png") && figs[0].formats().includes("chart"));
  const html = await s.runCode("import pandas as pd\npd.DataFrame({'n': [1, 2]})", undefined, { context: ctx });
  assert.match(html.results[0].html, /<table/);
  const e = await s.runCode("def f():\n    raise ValueError('bad input')\nf()", undefined, { context: ctx });
  assert.deepEqual([e.status, e.ok, e.error.name, e.error.value], ["error", false, "ValueError", "bad input"]);
  assert.ok(e.error.traceback.some((l) => l.includes("f()")));
  const to = await s.runCode("while True:\n    pass", undefined, { context: ctx, timeout: 2 });
  assert.deepEqual([to.status, to.timedOut], ["timeout", true]);
});

test("code: stream callbacks get stdout in order as it comes; dead kernel and restart", T180, async (t) => {
  const s = await codeSession(t, "python");
  if (!s) return;
  const ctx = await s.createCodeContext();
  const seen = [];
  const r = await s.runCode(
    "import time\nprint('a', flush=True)\ntime.sleep(0.5)\nprint('b', flush=True)\n6 * 7",
    undefined,
    {
      context: ctx,
      onStdout: (d) => seen.push(["out", d, Date.now()]),
      onResult: (x) => seen.push(["result", x.text, Date.now()]),
    },
  );
  assert.deepEqual([r.status, r.stdout, r.text], ["ok", "a\nb\n", "42"]);
  assert.equal(seen.filter((x) => x[0] === "out").map((x) => x[1]).join(""), "a\nb\n");
  assert.deepEqual(seen.at(-1).slice(0, 2), ["result", "42"]);
  const ta = seen.find((x) => x[1].includes("a"))[2];
  const tb = seen.find((x) => x[1].includes("b"))[2];
  assert.ok(tb - ta >= 300, `stdout came together (${tb - ta} ms apart)`);
  const errs = [];
  const z = await s.runCode("1/0", undefined, { context: ctx, onError: (e) => errs.push(e.name) });
  assert.deepEqual([z.status, errs], ["error", ["ZeroDivisionError"]]);
  await s.runCode("lost = 1", undefined, { context: ctx });
  const d = await s.runCode("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", undefined, { context: ctx });
  assert.deepEqual([d.status, d.error.name], ["dead", "KernelDied"]);
  assert.equal((await s.getCodeContext(ctx)).state, "dead");
  await assert.rejects(s.runCode("1", undefined, { context: ctx }), (e) => e instanceof SandboxAPIError && e.statusCode === 409);
  const fresh = await s.restartCodeContext(ctx);
  assert.deepEqual([fresh.id, fresh.state], [ctx.id, "running"]);
  assert.equal((await s.runCode("lost", undefined, { context: ctx })).error.name, "NameError");
});

test("code: javascript context keeps state", T180, async (t) => {
  const s = await codeSession(t, "node");
  if (!s) return;
  const js = await s.createCodeContext("javascript");
  await s.runCode("var n = 40; function inc(x) { return x + 1 }", undefined, { context: js });
  await s.runCode("n = inc(n)", undefined, { context: js });
  const r = await s.runCode("console.log('hi'); n + 1", undefined, { context: js });
  assert.deepEqual([r.stdout, r.text, r.language], ["hi\n", "42", "javascript"]);
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
  // Absolute paths reach the sandbox as its user: the read-only root refuses a write.
  await assert.rejects(
    s.writeFile("/etc/x", "no"),
    (e) => e instanceof SandboxAPIError && e.statusCode === 403 && e.code === "forbidden",
  );
  await assert.rejects(
    s.writeFile("../x", "no"),
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

// ---- directory watches -------------------------------------------------------------------

/** A ready session destroyed when the test ends, not only in after(): the server runs at most
 * 20 sandboxes at once, and the whole suite makes more. */
async function ownSession(t, opts) {
  const s = await session(opts).ready();
  t.after(() => s.destroy({ missingOk: true }).catch(() => {}));
  return s;
}

/** Events of `w` up to and including the first for which want(ev) is true; fails when none
 * comes within `ms` or the watch ends first. */
async function until(w, want, ms = 10_000) {
  const seen = [];
  const deadline = Date.now() + ms;
  for (;;) {
    const left = deadline - Date.now();
    const ev = left > 0 ? await w.nextEvent(left) : null;
    assert.ok(ev, `no matching event within ${ms} ms (closed ${w.closed}): ${JSON.stringify(seen)}`);
    seen.push(ev);
    if (want(ev)) return seen;
  }
}

test("watchFiles: armed when it resolves, changes of its directory, not below it", T60, async (t) => {
  const s = await ownSession(t);
  assert.equal((await s.exec("mkdir -p /workspace/w")).exitCode, 0);
  const w = await s.watchFiles("w"); // relative: under /workspace
  try {
    assert.ok(w instanceof FileWatch);
    assert.deepEqual([w.path, w.watches, w.closed], ["/workspace/w", 1, false]);
    await s.writeFile("w/a.txt", "one"); // right after: the watch is armed
    let seen = await until(w, (e) => e.type === "create" && e.path === "/workspace/w/a.txt");
    assert.deepEqual(seen.at(-1), { type: "create", path: "/workspace/w/a.txt", dir: false });
    assert.ok((await s.exec("echo more >> /workspace/w/a.txt")).ok);
    await until(w, (e) => e.type === "write" && e.path === "/workspace/w/a.txt");
    // Not recursive: the new subdirectory is reported, what is made inside it is not.
    await s.exec("mkdir /workspace/w/sub && touch /workspace/w/sub/in.txt /workspace/w/marker");
    seen = await until(w, (e) => e.type === "create" && e.path === "/workspace/w/marker");
    assert.ok(seen.some((e) => e.type === "create" && e.path === "/workspace/w/sub" && e.dir));
    assert.deepEqual(seen.filter((e) => e.path?.startsWith("/workspace/w/sub/")), []);
    await s.exec("rm /workspace/w/a.txt && mv /workspace/w/marker /workspace/moved");
    seen = await until(w, (e) => e.type === "rename" && e.path === "/workspace/w/marker");
    assert.ok(seen.some((e) => e.type === "remove" && e.path === "/workspace/w/a.txt"));
    // nextEvent times out without losing the watch; the event still comes to the next call.
    assert.equal(await w.nextEvent(200), null);
    await s.writeFile("w/late.txt", "x");
    await until(w, (e) => e.path === "/workspace/w/late.txt");
  } finally {
    await w.close();
  }
  assert.equal(w.closed, true);
  assert.equal(await w.nextEvent(1000), null);
  for await (const ev of w) assert.fail(`after close: ${JSON.stringify(ev)}`);
});

test("watchFiles: recursive follows new directories; a for-await loop and break", T60, async (t) => {
  const s = await ownSession(t);
  await s.exec("mkdir -p /workspace/r/old");
  const w = await s.watchFiles("/workspace/r", { recursive: true, maxQueue: 100 });
  assert.deepEqual([w.path, w.watches], ["/workspace/r", 2]);
  const timer = setTimeout(() => w.close(), 15_000); // a lost event fails instead of hanging
  const seen = [];
  try {
    await s.writeFile("r/new/deep/g.txt", "parents made by the write");
    for await (const ev of w) {
      seen.push(ev);
      if (ev.type === "create" && ev.path === "/workspace/r/new/deep/g.txt") break;
    }
  } finally {
    clearTimeout(timer);
  }
  assert.equal(seen.at(-1)?.path, "/workspace/r/new/deep/g.txt", JSON.stringify(seen));
  assert.ok(seen.some((e) => e.type === "create" && e.path === "/workspace/r/new" && e.dir));
  assert.equal(w.closed, true); // break closed it
  const flat = await s.watchFiles("r");
  try {
    assert.equal(flat.watches, 1);
    await s.writeFile("r/new/deep/h.txt", "not seen");
    await s.writeFile("r/top.txt", "seen");
    const got = await until(flat, (e) => e.path === "/workspace/r/top.txt");
    assert.deepEqual(got.filter((e) => e.path?.includes("/deep/")), []);
  } finally {
    await flat.close();
  }
});

test("watchFiles: errors before the stream, the 8-watch limit, close frees one", T60, async (t) => {
  const s = await ownSession(t);
  await s.writeFile("plain.txt", "a file");
  await assert.rejects(
    s.watchFiles("/workspace/missing"),
    (e) => e instanceof NotFoundError && e.statusCode === 404 && e.code === "not_found",
  );
  await assert.rejects(
    s.watchFiles("plain.txt"),
    (e) => e instanceof SandboxAPIError && !(e instanceof NotFoundError) &&
      e.statusCode === 400 && e.code === "invalid_request",
  );
  await assert.rejects(s.watchFiles("/root"), (e) => e.statusCode === 403);  // root's, not ours
  await assert.rejects(
    s.watchFiles("/workspace", { maxQueue: 65537 }),
    (e) => e.statusCode === 400 && e.message.includes("max_queue"),
  );
  const gone = await client.get(s.id);
  const watches = [];
  try {
    for (let i = 0; i < 8; i++) watches.push(await s.watchFiles());
    await assert.rejects(
      s.watchFiles(),
      (e) => e instanceof SandboxAPIError && e.statusCode === 429 && e.code === "limit_exceeded",
    );
    await watches[0].close();
    // The closed connection ends that watch in the sandbox: a new one fits (soon).
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        watches.push(await s.watchFiles());
        break;
      } catch (e) {
        if (e.statusCode !== 429 || Date.now() > deadline) throw e;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    // An aborted signal closes the watch: a waiting nextEvent() rejects with its reason.
    await watches.at(-1).close();
    const aborting = await s.watchFiles("/workspace", { signal: AbortSignal.timeout(300) });
    watches.push(aborting);
    await assert.rejects(aborting.nextEvent(20_000), (e) => e.name === "TimeoutError");
  } finally {
    await Promise.all(watches.map((w) => w.close()));
  }
  await gone.destroy();
  await assert.rejects(s.watchFiles(), NotFoundError);
});

test("watchFiles: removing the directory ends the iteration; a destroyed sandbox too", T60, async (t) => {
  const s = await ownSession(t);
  await s.exec("mkdir -p /workspace/gone/sub");
  const w = await s.watchFiles("gone", { recursive: true });
  const timer = setTimeout(() => w.close(), 15_000);
  const events = [];
  try {
    await s.exec("touch /workspace/gone/sub/f && rm -rf /workspace/gone");
    for await (const ev of w) events.push(ev); // ends by itself after the end line
  } finally {
    clearTimeout(timer);
  }
  assert.equal(w.endReason, "removed", JSON.stringify(events));
  assert.equal(w.closed, true);
  assert.ok(events.some((e) => e.type === "remove" && e.path === "/workspace/gone/sub" && e.dir));

  const s2 = await ownSession(t);
  const w2 = await s2.watchFiles();
  const guard = setTimeout(() => w2.close(), 30_000);
  let outcome;
  try {
    await s2.destroy();
    for await (const _ of w2);
    outcome = w2.endReason;
  } catch (e) {
    outcome = e;
  } finally {
    clearTimeout(guard);
  }
  assert.ok(
    outcome instanceof StreamError || outcome instanceof SandboxConnectionError ||
      typeof outcome === "string",
    String(outcome),
  );
  assert.equal(w2.closed, true);
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
    // rollback's snapshot is a body field: 400 naming it, the sandbox is not gone (ADR 0016).
    await assert.rejects(s.rollback("snap_0000000000000000"),
      (e) => e.statusCode === 400 && e.code === "invalid_request" && /snapshot_id/.test(e.message));
  } finally {
    await client.deleteSnapshot(snap).catch(() => {});
  }
  await assert.rejects(client.getSnapshot(snap.id), NotFoundError);
});

test("forkRunning: children with the state at the fork, each its own", async () => {
  const s = session();
  await s.writeFile("state.txt", "at-fork");
  const kids = await s.forkRunning({ count: 2, timeoutSeconds: 120 });
  try {
    assert.deepEqual(kids.map((k) => [k.error, k.memory]), [[undefined, false], [undefined, false]]);
    const [a, b] = kids.map((k) => k.sandbox);
    assert.equal(a.info.timeoutSeconds, 120);
    await s.writeFile("state.txt", "parent-later");
    await a.writeFile("state.txt", "a");
    assert.equal(await b.readText("state.txt"), "at-fork");
    assert.equal(await s.readText("state.txt"), "parent-later");
    await assert.rejects(s.forkRunning({ count: 0 }),
      (e) => e.statusCode === 400 && e.code === "invalid_request" && /count/.test(e.message));
  } finally {
    // The suite's server admits 20 at once; later tests need the room: these go now.
    for (const k of kids) await k.sandbox?.destroy().catch(() => {});
    await s.destroy();
  }
});

// ---- preview URLs (ADR 0015) ----------------------------------------------------------

// One GET to the server with the Host header a browser sends for a preview URL.
function getOnHost(host, headers = {}) {
  const u = new URL(URL_);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: u.hostname, port: u.port, path: "/", headers: { ...headers, host } },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (d) => (body += d));
        res.on("end", () => resolve({ status: res.statusCode, body }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

test("previewUrl opens a port without a header until revokePreview", T60, async () => {
  const s = await session().ready();
  await s.exec("mkdir -p /workspace/www && echo 'preview of the ts test' > /workspace/www/index.html");
  await s.startProcess("cd /workspace/www && exec python3 -m http.server --bind 127.0.0.1 8000");
  const p = await s.previewUrl(8000, { ttlSeconds: 120 });
  const host = `8000-${s.id.replace("_", "-")}.localhost:${new URL(URL_).port}`;
  assert.deepEqual([p.port, p.sandboxId, p.host], [8000, s.id, host]);
  assert.match(p.url, new RegExp(`^http://${host.replace(/\./g, "\\.")}/\\?_asb_preview_token=asbp_[0-9a-f]{64}$`));
  assert.ok(p.token && p.url.endsWith(p.token));
  const cookie = { cookie: `_asb_preview_token=${p.token}` };
  let r = await getOnHost(host, cookie);
  for (let i = 0; r.status === 503 && i < 150; i++) {
    await new Promise((ok) => setTimeout(ok, 100)); // the app is starting
    r = await getOnHost(host, cookie);
  }
  assert.deepEqual([r.status, r.body], [200, "preview of the ts test\n"]);
  const listed = await s.listPreviews(8000);
  assert.deepEqual(listed.map((x) => [x.id, x.url, x.token]), [[p.id, null, null]]);
  assert.deepEqual(await s.listPreviews(8001), []);
  await s.revokePreview(p);
  assert.equal((await getOnHost(host, cookie)).status, 401);
  assert.deepEqual(await s.listPreviews(), []);
  await assert.rejects(s.revokePreview(p.id), NotFoundError);
  await assert.rejects(
    s.previewUrl(8000, { ttlSeconds: 86401 }),
    (e) => e instanceof SandboxAPIError && e.statusCode === 400 && e.message.includes("ttl_seconds"),
  );
  assert.equal((await s.previewUrl(8000, { ttlSeconds: 86400 })).port, 8000); // the maximum
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
