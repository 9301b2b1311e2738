// E2B's SDK against our own, in one run on one server (docs/e2b.md): each iteration creates a
// sandbox, runs `echo hi` in it and destroys it, through
//   e2b      Sandbox.create() + commands.run('echo hi') + kill()   (the official `e2b` SDK)
//   ours     sandbox.create() + exec('echo hi') + destroy()         (sdk/typescript)
// and prints p50/p90 of create→output and of the whole round trip beside each other, with the
// ratio e2b/ours: the cost of the E2B wire (Connect framing, the envd token, the process table
// instead of a one-shot exec). Run by bench/bench_e2b.sh (needs root and a built tree).
import { performance } from 'node:perf_hooks';
import { Sandbox as E2bSandbox } from 'e2b';
import { Sandbox as OurSandbox } from '../sdk/typescript/dist/index.js';
import { Server } from '../tests/mcp/harness.mjs';

const N = Number(process.env.ASB_BENCH_ITERATIONS || 20);

function pct(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

async function measure(name, once) {
  const first = [], total = [];
  await once();  // warm-up: templates in the page cache, connections open
  for (let i = 0; i < N; i++) {
    const t0 = performance.now();
    const t1 = await once();
    total.push(performance.now() - t0);
    first.push(t1 - t0);
  }
  return { name, first, total };
}

const server = await new Server().start();
try {
  const key = await server.newKey();
  server.keys = [key];
  process.env.E2B_API_URL = server.url;
  process.env.E2B_SANDBOX_URL = server.url;
  process.env.E2B_API_KEY = key;
  const ours = new OurSandbox({ baseUrl: server.url, apiKey: key });

  const e2b = await measure('e2b SDK', async () => {
    const s = await E2bSandbox.create();
    const r = await s.commands.run('echo hi');
    const t = performance.now();
    if (r.stdout !== 'hi\n') throw new Error('e2b: ' + JSON.stringify(r));
    await s.kill();
    return t;
  });
  const own = await measure('our SDK', async () => {
    const s = ours.create({ template: 'base' });
    const r = await s.exec('echo hi');
    const t = performance.now();
    if (r.stdout !== 'hi\n') throw new Error('ours: ' + JSON.stringify(r));
    await s.destroy();
    return t;
  });

  const f = (x) => x.toFixed(1).padStart(8);
  console.log(`create + run "echo hi" + destroy, ${N} iterations each, one server (ms)`);
  console.log('                         e2b SDK p50   p90 | our SDK p50   p90 | e2b/ours p50');
  for (const [label, key] of [['create → output', 'first'], ['whole round trip', 'total']]) {
    const a50 = pct(e2b[key], 50), a90 = pct(e2b[key], 90);
    const b50 = pct(own[key], 50), b90 = pct(own[key], 90);
    console.log(`${label.padEnd(22)} ${f(a50)} ${f(a90)} | ${f(b50)} ${f(b90)} | ${(a50 / b50).toFixed(2)}`);
  }
} finally {
  await server.close();
}
