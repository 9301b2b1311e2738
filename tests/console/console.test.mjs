// The web console (ADR 0022) in real Chromium (Debian's, driven by playwright-core) against the
// real `agent-sandbox serve` with real sandboxes (tests/mcp/harness.mjs): sign-in, create, the
// terminal (echo hi, resize), upload and read back, edit and save, snapshot/change/rollback,
// tenancy (a second key sees nothing), hostile file names and output that must stay text, the
// security headers, the key never in a URL or the log. A screenshot of each page goes to
// <build>/console-screenshots/ (ASB_CONSOLE_SCREENSHOTS overrides).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { Server, BIN, missingPrerequisite } from '../mcp/harness.mjs';

const skip = missingPrerequisite();
const SHOTS = process.env.ASB_CONSOLE_SCREENSHOTS ||
    path.join(path.dirname(path.dirname(path.resolve(BIN))), 'console-screenshots');
const HOSTILE = '<img src=x onerror=alert(1)>';

let server, browser, context, page, tenantKey;
const dialogs = [];
const pageErrors = [];

function rawGet(target) {
  return new Promise((resolve, reject) => {
    const u = new URL(server.url);
    http.get({ host: u.hostname, port: u.port, path: target }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode, body }));
    }).on('error', reject);
  });
}

async function shot(name) {
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, name + '.png') });
}

async function terminalText() {
  return page.evaluate(() => document.querySelector('.xterm-rows')?.innerText ?? '');
}

async function waitTerminalLine(re, timeout = 15000) {
  const deadline = Date.now() + timeout;
  let last = '';
  while (Date.now() < deadline) {
    last = await terminalText();
    if (last.split('\n').some((l) => re.test(l.replace(/\u00a0/g, ' ').trimEnd()))) return last;
    await page.waitForTimeout(100);
  }
  throw new Error(`terminal never showed ${re}; it shows:\n${last}`);
}

/** The elements a hostile name or output would have made: any <img> but ours, any <b>. */
async function injected() {
  return page.evaluate(() => [...document.querySelectorAll('img:not(#viewer-image), b, script:not([src])')]
      .map((e) => e.outerHTML));
}

async function okProgress() {
  await page.waitForSelector('.progress.ok, .progress.error', { timeout: 60000 });
  const cls = await page.getAttribute('.progress.ok, .progress.error', 'class');
  const text = await page.textContent('.progress');
  assert.match(cls, /ok/, text);
  // A line still showing work must never wear the last outcome's class: that made a wait for
  // "done" pass at once, before a slow rollback (a microVM's) had ended.
  assert.deepEqual(await page.evaluate(() => window.progressMislabels), []);
}

/** Records, in the page, every moment a progress line styled as an outcome shows work ("…"):
 * as it happens, since the work may end before the test could look. */
function watchProgressLabels() {
  window.progressMislabels = [];
  new MutationObserver(() => {
    for (const el of document.querySelectorAll('.progress.ok, .progress.error')) {
      if (el.textContent.includes('\u2026')) window.progressMislabels.push(el.textContent);
    }
  }).observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
}

async function signIn(key) {
  await page.goto(server.url + '/console');
  await page.fill('#api-key', key);
  await page.click('#signin');
  await page.waitForSelector('#page-sandboxes');
}

before(async () => {
  if (skip) return;
  server = await new Server().start();
  tenantKey = await server.newKey();
  server.keys = [tenantKey];
  browser = await chromium.launch({
    executablePath: process.env.ASB_CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--no-proxy-server', '--disable-dev-shm-usage'],
  });
  context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  page = await context.newPage();
  await page.addInitScript(watchProgressLabels);
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  page.on('pageerror', (e) => pageErrors.push(String(e)));
});

after(async () => {
  await browser?.close().catch(() => {});
  await server?.close();
});

test('the console in chromium', { skip: skip ?? false, timeout: 110000 }, async (t) => {
  let sandboxId;

  await t.test('security headers, and 404 for what is not a console file', async () => {
    const r = await fetch(server.url + '/console');
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type'), /^text\/html/);
    const csp = r.headers.get('content-security-policy');
    for (const d of ["default-src 'self'", "script-src 'self';", "connect-src 'self'",
      "frame-ancestors 'none'", "object-src 'none'", "img-src 'self' data: blob:"]) {
      assert.ok(csp.includes(d), csp);
    }
    assert.equal(r.headers.get('x-frame-options'), 'DENY');
    assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(r.headers.get('referrer-policy'), 'no-referrer');
    // Raw targets (fetch would normalize the dots away).
    for (const p of ['/console/../openapi.json', '/console/%2e%2e/%2e%2e/etc/passwd',
      '/console/assets/../../etc/passwd', '/console/nope.js', '/console/.vite/manifest.json']) {
      const x = await rawGet(p);
      assert.equal(x.status, 404, p);
      assert.equal(JSON.parse(x.body).error.code, 'not_found', p);
    }
    assert.equal((await fetch(server.url + '/')).status, 200);
  });

  await t.test('sign in (a bad key is refused; the key is kept in sessionStorage only)', async () => {
    await page.goto(server.url + '/console');
    await shot('signin');
    await page.fill('#api-key', 'asb_not_a_key');
    await page.click('#signin');
    await page.waitForSelector('#signin-error:not(:empty)');
    assert.match(await page.textContent('#signin-error'), /not valid/);
    await page.fill('#api-key', server.adminKey);
    await page.click('#signin');
    await page.waitForSelector('#page-sandboxes');
    assert.ok(!page.url().includes(server.adminKey));
    assert.equal(await page.evaluate(() => localStorage.length), 0);
    assert.equal(await page.evaluate(() => sessionStorage.getItem('agent-sandbox.key')), server.adminKey);
    assert.ok(await page.$('#nav-keys'), 'an admin key sees the Keys page');
  });

  await t.test('create a sandbox from the form', async () => {
    await page.waitForSelector('#create-template option[value=base]', { state: 'attached' });
    await page.selectOption('#create-template', 'base');
    await page.fill('input[name=timeout_seconds]', '900');
    await page.click('#create-submit');
    await page.waitForURL(/#\/sandbox\/sb_[0-9a-f]{16}\/terminal$/, { timeout: 60000 });
    sandboxId = page.url().match(/sb_[0-9a-f]{16}/)[0];
    const r = await server.rest('GET', '/v1/sandboxes/' + sandboxId);
    assert.equal(r.json.status, 'running');
    assert.equal(r.json.template, 'base');
  });

  await t.test('the terminal: echo hi, then resize', async () => {
    await page.waitForSelector('#term-status[data-state=open]', { timeout: 30000 });
    await page.click('#terminal');
    await page.keyboard.type('echo hi\n');
    await waitTerminalLine(/^hi$/);
    await shot('terminal');
    const before = await page.textContent('#term-status');
    await page.setViewportSize({ width: 900, height: 640 });
    await page.waitForFunction((b) => document.querySelector('#term-status').textContent !== b, before);
    const [, cols, rows] = (await page.textContent('#term-status')).match(/(\d+)×(\d+)/);
    await page.keyboard.type('stty size\n');
    await waitTerminalLine(new RegExp(`^${rows} ${cols}$`));
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  await t.test('HTML and escape sequences in output stay text', async () => {
    await page.keyboard.type(`printf '%s\\033]0;<b>title</b>\\007\\033[31m<b>red</b>\\033[0m\\033]8;;javascript:alert(2)\\033\\\\link\\033]8;;\\033\\\\\\n' '${HOSTILE}'\n`);
    await waitTerminalLine(/<b>red<\/b>link$/);
    assert.deepEqual(await injected(), []);
    assert.notEqual(await page.title(), '<b>title</b>');
  });

  await t.test('upload by the file input, see it listed and readable', async () => {
    await page.click('#tab-link-files');
    await page.waitForSelector('#files-path:not(:empty)');
    await page.setInputFiles('#upload-input', { name: 'hello.txt', mimeType: 'text/plain', buffer: Buffer.from('hello from the browser\n') });
    await page.waitForSelector('tr[data-name="hello.txt"]');
    await page.click('tr[data-name="hello.txt"] .file-name');
    await page.waitForSelector('#editor');
    assert.equal(await page.inputValue('#editor'), 'hello from the browser\n');
    const r = await fetch(`${server.url}/v1/sandboxes/${sandboxId}/files?path=/workspace/hello.txt`,
        { headers: { Authorization: 'Bearer ' + server.adminKey } });
    assert.equal(await r.text(), 'hello from the browser\n');
  });

  await t.test('edit and save, read back over the API', async () => {
    await page.fill('#editor', 'edited in the console\n');
    await page.click('#save');
    await okProgress();
    const r = await fetch(`${server.url}/v1/sandboxes/${sandboxId}/files?path=/workspace/hello.txt`,
        { headers: { Authorization: 'Bearer ' + server.adminKey } });
    assert.equal(await r.text(), 'edited in the console\n');
  });

  await t.test('a hostile file name and contents stay text; images open from blob: URLs', async () => {
    const put = (p, body) => fetch(`${server.url}/v1/sandboxes/${sandboxId}/files?path=${encodeURIComponent(p)}`,
        { method: 'PUT', headers: { Authorization: 'Bearer ' + server.adminKey }, body });
    assert.ok((await put('/workspace/' + HOSTILE, `<script>alert(3)</script>${HOSTILE}`)).ok);
    // A 1x1 PNG.
    const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
    assert.ok((await put('/workspace/pixel.png', png)).ok);
    await page.click('button:text("Refresh")');
    await page.waitForSelector('tr[data-name="pixel.png"]');
    const names = await page.$$eval('#file-rows .file-name', (as) => as.map((a) => a.textContent));
    assert.ok(names.includes(HOSTILE), names.join(','));
    await page.click(`#file-rows tr:has-text("onerror") .file-name`);
    await page.waitForFunction(() => document.querySelector('#editor')?.value.includes('<script>'));
    assert.deepEqual(await injected(), []);
    await page.click('tr[data-name="pixel.png"] .file-name');
    await page.waitForSelector('#viewer-image');
    assert.match(await page.getAttribute('#viewer-image', 'src'), /^blob:/);
    await page.waitForFunction(() => document.querySelector('#viewer-image').naturalWidth === 1);
    // An SVG with a script: shown as an image, its script never runs.
    const svg = '<svg xmlns="http://www.w3.org/2000/svg" width="320" height="120">' +
        '<script>alert(4)</script><rect width="320" height="120" rx="12" fill="#1f6feb"/>' +
        '<text x="160" y="72" font-size="32" text-anchor="middle" fill="#fff" ' +
        'font-family="sans-serif">from the sandbox</text></svg>';
    assert.ok((await put('/workspace/logo.svg', svg)).ok);
    await page.click('button:text("Refresh")');
    await page.waitForSelector('tr[data-name="logo.svg"]');
    await page.click('tr[data-name="logo.svg"] .file-name');
    await page.waitForFunction(() => document.querySelector('#viewer-image')?.naturalWidth === 320);
    assert.deepEqual(dialogs, []);
    await shot('files');
  });

  await t.test('snapshot, change, roll back, see the old content', async () => {
    await page.click('#tab-link-snapshots');
    await page.fill('#snapshot-name', 'before-change');
    await page.click('#take-snapshot');
    await okProgress();
    await page.waitForSelector('#snapshot-rows tr');
    const put = await fetch(`${server.url}/v1/sandboxes/${sandboxId}/files?path=/workspace/hello.txt`,
        { method: 'PUT', headers: { Authorization: 'Bearer ' + server.adminKey }, body: 'changed\n' });
    assert.ok(put.ok);
    await shot('snapshots');
    await page.click('#snapshot-rows tr .rollback');
    await okProgress();
    await page.click('#tab-link-files');
    await page.waitForSelector('tr[data-name="hello.txt"]');
    await page.click('tr[data-name="hello.txt"] .file-name');
    await page.waitForFunction(() => document.querySelector('#editor')?.value === 'edited in the console\n');
  });

  await t.test('fork: a new sandbox with the workspace as it is, opened on its files', async () => {
    await page.click('#fork-sandbox');
    // On success the console opens the child (its own page): no progress line to wait for.
    await page.waitForFunction((parent) => /^#\/sandbox\/sb_[0-9a-f]+\/files$/.test(location.hash) &&
        !location.hash.includes(parent), sandboxId);
    const child = decodeURIComponent((await page.evaluate(() => location.hash)).split('/')[2]);
    try {
      await page.click('tr[data-name="hello.txt"] .file-name');
      await page.waitForFunction(() => document.querySelector('#editor')?.value === 'edited in the console\n');
      const got = await (await fetch(`${server.url}/v1/sandboxes/${child}`,
          { headers: { Authorization: 'Bearer ' + server.adminKey } })).json();
      assert.equal(got.status, 'running');
    } finally {
      await fetch(`${server.url}/v1/sandboxes/${child}`,
          { method: 'DELETE', headers: { Authorization: 'Bearer ' + server.adminKey } });
    }
    await page.evaluate((id) => { location.hash = `#/sandbox/${id}/files`; }, sandboxId);
    await page.waitForSelector('tr[data-name="hello.txt"]');
  });

  await t.test('processes, network, audit, overview and keys pages', async () => {
    await page.click('#tab-link-processes');
    await page.fill('#process-command', 'echo "<b>not bold</b>"; for i in 1 2 3; do echo "line $i"; done');
    await page.click('#process-start');
    await page.waitForFunction(() => /line 3/.test(document.querySelector('#process-output').textContent));
    assert.match(await page.textContent('#process-output'), /<b>not bold<\/b>/);
    assert.deepEqual(await injected(), []);
    await page.waitForSelector('#process-rows tr');
    const cmds = await page.$$eval('#process-rows td.mono', (tds) => tds.map((td) => td.textContent));
    assert.ok(cmds.some((c) => c.includes('exec bash')), cmds.join('|'));
    await shot('processes');
    await page.click('#tab-link-network');
    await page.waitForSelector('text=Exposed ports');
    await shot('network');
    await page.click('#tab-link-events');
    await page.waitForSelector('#event-rows tr');
    await shot('sandbox-audit');
    await page.click('#nav-overview');
    await page.waitForSelector('#health');
    assert.equal(await page.textContent('#health'), 'ok');
    assert.equal(await page.textContent('#backend'), process.env.AGENT_SANDBOX_BACKEND || 'ns');
    await shot('overview');
    await page.click('#nav-keys');
    await page.fill('#key-name', 'made-in-console');
    await page.click('#key-create');
    await page.waitForSelector('#secret-value');
    const secret = await page.inputValue('#secret-value');
    assert.match(secret, /^asb_[0-9a-f]{48}$/);
    await shot('keys');
    await page.click('#nav-sandboxes');
    await page.waitForSelector(`tr[data-id="${sandboxId}"]`);
    await shot('sandboxes');
    assert.deepEqual(dialogs, []);
  });

  await t.test('pause keeping only the files, then resume: the files are still there', async () => {
    await page.evaluate((id) => { location.hash = `#/sandbox/${id}/files`; }, sandboxId);
    await page.waitForSelector('tr[data-name="hello.txt"]');
    await page.waitForSelector('#pause-sandbox-files:not([hidden])');
    await page.click('#pause-sandbox-files');
    await okProgress();
    await page.waitForFunction(() => /paused \(files only\)/.test(
        document.querySelector('#sandbox-summary').textContent));
    assert.equal(await page.isVisible('#pause-sandbox'), false);
    const got = await (await fetch(`${server.url}/v1/sandboxes/${sandboxId}`,
        { headers: { Authorization: 'Bearer ' + server.adminKey } })).json();
    assert.deepEqual([got.status, got.paused_memory], ['paused', false]);
    await page.click('#resume-sandbox');
    await okProgress();
    await page.waitForSelector('#pause-sandbox:not([hidden])');
    await page.click('#tab-link-files');
    await page.click('tr[data-name="hello.txt"] .file-name');
    await page.waitForFunction(() => document.querySelector('#editor')?.value === 'edited in the console\n');
  });

  await t.test('sign out forgets the key; a second key sees none of it', async () => {
    await page.click('#signout');
    await page.waitForSelector('#api-key');
    assert.equal(await page.evaluate(() => sessionStorage.length), 0);
    await signIn(tenantKey);
    await page.waitForSelector('#sandbox-rows', { state: 'attached' });
    await page.waitForFunction(() => /0 of 0/.test(document.querySelector('#page-sandboxes .toolbar p').textContent));
    assert.equal(await page.$('#nav-keys'), null);
    await page.goto(`${server.url}/console#/sandbox/${sandboxId}/files`);
    await page.waitForSelector('#sandbox-summary .error');
    assert.match(await page.textContent('#sandbox-summary .error'), /not found/);
    assert.equal(await page.$('tr[data-name="hello.txt"]'), null);
    await page.goto(`${server.url}/console#/events`);
    await page.waitForSelector('#page-events');
    await page.waitForTimeout(500);
    const targets = await page.$$eval('#event-rows tr', (trs) => trs.map((tr) => tr.textContent));
    assert.ok(!targets.some((x) => x.includes(sandboxId)), targets.join('\n'));
  });

  await t.test('nothing fired, nothing leaked', async () => {
    assert.deepEqual(dialogs, []);
    assert.deepEqual(pageErrors, []);
    const log = fs.readFileSync(path.join(server.dataDir, 'serve.log'), 'utf8');
    assert.ok(!log.includes(server.adminKey), 'the admin key is in the server log');
    assert.ok(!log.includes(tenantKey), 'the tenant key is in the server log');
  });
});
