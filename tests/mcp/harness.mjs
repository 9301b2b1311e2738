// Starts the REAL `agent-sandbox serve` (like tests/e2e/harness.py) on a free loopback port with
// a temporary data dir whose templates/ points at the real template rootfs, with an admin key,
// and cleans up everything it made: sandboxes, the server, leftover mounts, its parent cgroup,
// the data dir.
//   ASB_BIN        path of agent-sandbox (CTest passes the built one); sandboxd beside it
//   ASB_TEMPLATES  templates dir (default /var/lib/agent-sandbox/templates)
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

export const BIN = process.env.ASB_BIN || 'agent-sandbox';
const TEMPLATES = process.env.ASB_TEMPLATES || '/var/lib/agent-sandbox/templates';

/** The reason the tests cannot run here, or null. */
export function missingPrerequisite() {
  if (process.getuid() !== 0) return 'needs root (namespaces, cgroups, loop devices)';
  if (!fs.existsSync(path.join(TEMPLATES, 'base', 'rootfs', 'usr'))) {
    return `no base template rootfs under ${TEMPLATES} (run scripts/build-template.sh)`;
  }
  try {
    fs.accessSync(BIN, fs.constants.X_OK);
  } catch {
    return `agent-sandbox binary not found at ${BIN} (set ASB_BIN)`;
  }
  if (!fs.existsSync(path.join(path.dirname(BIN), 'sandboxd'))) return 'sandboxd not beside BIN';
  return null;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export class Server {
  /** `insecure`: serve with --insecure-no-auth (for clients that cannot send a key); `env`:
   * more AGENT_SANDBOX_* settings of the server. */
  constructor({ insecure = false, env = {} } = {}) {
    this.insecure = insecure;
    this.env = env;
    this.adminKey = 'asb_' + crypto.randomBytes(24).toString('hex');
    this.dataDir = fs.mkdtempSync('/var/tmp/asb-mcp-');
    fs.symlinkSync(TEMPLATES, path.join(this.dataDir, 'templates'));
    this.proc = null;
  }

  get url() {
    return `http://127.0.0.1:${this.port}`;
  }

  async start() {
    this.port = await freePort();
    const log = fs.openSync(path.join(this.dataDir, 'serve.log'), 'a');
    this.proc = spawn(BIN, ['serve', ...(this.insecure ? ['--insecure-no-auth'] : [])], {
      env: {
        ...process.env,
        AGENT_SANDBOX_HOST: '127.0.0.1',
        AGENT_SANDBOX_PORT: String(this.port),
        AGENT_SANDBOX_DATA_DIR: this.dataDir,
        AGENT_SANDBOX_API_KEYS: this.adminKey,
        AGENT_SANDBOX_STREAM_KEEPALIVE_SECONDS: '1',
        AGENT_SANDBOX_SHUTDOWN_GRACE_SECONDS: '10',
        ...this.env,
      },
      stdio: ['ignore', log, log],
    });
    fs.closeSync(log);
    this.exited = new Promise((r) => this.proc.on('exit', (code) => r(code)));
    const deadline = Date.now() + 20000;
    while (Date.now() < deadline) {
      if (this.proc.exitCode !== null) throw new Error('server exited:\n' + this.logTail());
      try {
        const r = await fetch(this.url + '/healthz');
        if (r.status === 200) return this;
      } catch {}
      await sleep(50);
    }
    throw new Error('server did not answer /healthz:\n' + this.logTail());
  }

  logTail() {
    try {
      return fs.readFileSync(path.join(this.dataDir, 'serve.log'), 'utf8').split('\n')
          .slice(-40).join('\n');
    } catch {
      return '';
    }
  }

  /** A REST call with `key` (default the admin key); returns {status, json}. */
  async rest(method, target, body, key = this.adminKey) {
    const r = await fetch(this.url + target, {
      method,
      headers: { Authorization: 'Bearer ' + key, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    let json = null;
    try { json = JSON.parse(text); } catch {}
    return { status: r.status, json };
  }

  /** A new non-admin API key (raw text). */
  async newKey() {
    const r = await this.rest('POST', '/v1/keys', { name: 'mcp-' + crypto.randomBytes(3).toString('hex') });
    if (r.status !== 201) throw new Error('key create: ' + JSON.stringify(r));
    return r.json.key;
  }

  /** Full cleanup; never throws. */
  async close() {
    try {
      if (this.proc && this.proc.exitCode === null) {
        for (const key of [this.adminKey, ...(this.keys || [])]) {
          const r = await this.rest('GET', '/v1/sandboxes', undefined, key).catch(() => null);
          for (const s of r?.json?.sandboxes || []) {
            await this.rest('DELETE', '/v1/sandboxes/' + s.id, undefined, key).catch(() => {});
          }
        }
        this.proc.kill('SIGTERM');
        const t = setTimeout(() => this.proc.kill('SIGKILL'), 30000);
        await this.exited;
        clearTimeout(t);
      }
    } catch (e) {
      console.error('cleanup:', e);
    }
    this.removeDataDir();
  }

  // serve.cc's CgroupNameFor(): FNV-1a 64 of the real data dir path, low 32 bits in hex.
  cgroupName() {
    let h = 1469598103934665603n;
    for (const c of Buffer.from(fs.realpathSync(this.dataDir))) {
      h ^= BigInt(c);
      h = (h * 1099511628211n) & 0xffffffffffffffffn;
    }
    return 'agent-sandbox-' + (h & 0xffffffffn).toString(16).padStart(8, '0');
  }

  removeDataDir() {
    try {
      const name = this.cgroupName();
      const roots = ['/sys/fs/cgroup', ...fs.readdirSync('/sys/fs/cgroup')
          .map((d) => path.join('/sys/fs/cgroup', d))];
      for (const root of roots) {
        try { fs.rmdirSync(path.join(root, name)); } catch {}
      }
      const mounts = fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n')
          .map((l) => l.split(' ')[4]).filter((m) => m && m.startsWith(this.dataDir + '/'))
          .sort((a, b) => b.length - a.length);
      for (const m of mounts) spawnSync('umount', ['-l', m]);
    } catch {}
    try { fs.unlinkSync(path.join(this.dataDir, 'templates')); } catch {}
    fs.rmSync(this.dataDir, { recursive: true, force: true });
  }
}

