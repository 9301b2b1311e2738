// Overview: sandbox counts by status and template, usage per key (from the recent audit
// events, and each admin-visible key's quota), recent events, the server's health, readiness
// and backend.
import { api } from '../api';
import { h, replace, errorText } from '../dom';
import type { Page, Session } from '../main';

function count<T>(items: T[], key: (t: T) => string): Map<string, number> {
  const m = new Map<string, number>();
  for (const i of items) m.set(key(i), (m.get(key(i)) ?? 0) + 1);
  return m;
}

function table(title: string, head: string[], rows: (string | number)[][], id: string): HTMLElement {
  return h(
    'div',
    { class: 'card' },
    h('h2', {}, title),
    h('table', { id }, h('thead', {}, h('tr', {}, head.map((t) => h('th', {}, t)))), h('tbody', {}, rows.map((r) => h('tr', {}, r.map((c) => h('td', {}, String(c))))))),
  );
}

export function overviewPage(session: Session): Page {
  const grid = h('div', { class: 'cards', id: 'overview' }, h('p', { class: 'muted' }, 'loading…'));

  async function load(): Promise<void> {
    const [health, ready, sandboxes, events, keys] = await Promise.all([
      api('GET', '/healthz').catch((e) => ({ status: errorText(e) })),
      fetch('/readyz', { cache: 'no-store' }).then((r) => r.json()).catch((e) => ({ status: errorText(e) })),
      api('GET', '/v1/sandboxes').catch(() => ({ sandboxes: [] })),
      api('GET', '/v1/events?limit=200').catch(() => ({ events: [] })),
      session.admin ? api('GET', '/v1/keys').catch(() => ({ keys: [] })) : Promise.resolve({ keys: [] }),
    ]);
    const sbs: any[] = sandboxes.sandboxes ?? [];
    const evs: any[] = events.events ?? [];
    const byStatus = count(sbs, (s) => s.status);
    const byTemplate = count(sbs, (s) => s.template);
    const byKey = count(evs, (e) => e.key_id ?? '(none)');
    const keyName = new Map<string, string>((keys.keys ?? []).map((k: any) => [k.id, k.name]));
    const checks = Object.entries(ready.checks ?? {}).map(([k, v]: [string, any]) => [k, typeof v === 'object' ? JSON.stringify(v) : String(v)]);
    replace(
      grid,
      h(
        'div',
        { class: 'card' },
        h('h2', {}, 'Server'),
        h(
          'dl',
          { class: 'summary' },
          h('dt', {}, 'Health'),
          h('dd', { id: 'health' }, String(health.status)),
          h('dt', {}, 'Version'),
          h('dd', {}, String(health.version ?? '-')),
          h('dt', {}, 'Backend'),
          h('dd', { id: 'backend' }, String(health.backend ?? '-')),
          h('dt', {}, 'Ready'),
          h('dd', {}, typeof ready.status === 'string' ? ready.status : JSON.stringify(ready.status)),
        ),
        checks.length ? h('table', {}, h('tbody', {}, checks.map(([k, v]) => h('tr', {}, h('td', {}, k), h('td', { class: 'mono wrap' }, v))))) : null,
      ),
      table('Sandboxes by status', ['Status', 'Count'], [...byStatus].map(([k, v]) => [k, v]).concat([['total', sbs.length]]), 'by-status'),
      table('Sandboxes by template', ['Template', 'Count'], [...byTemplate], 'by-template'),
      table(
        'Usage per key (last 200 events)',
        ['Key', 'Name', 'Calls'],
        [...byKey].sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, keyName.get(k) ?? '', v]),
        'by-key',
      ),
      table(
        'Recent events',
        ['Time', 'Action', 'Target', 'Status'],
        evs.slice(0, 10).map((e) => [new Date(e.time).toLocaleTimeString(), e.action, e.target, e.status]),
        'recent-events',
      ),
    );
  }
  void load().catch((e) => replace(grid, h('p', { class: 'error' }, errorText(e))));
  const timer = window.setInterval(() => void load().catch(() => {}), 10000);
  return { el: h('section', { id: 'page-overview' }, h('h1', {}, 'Overview'), grid), dispose: () => window.clearInterval(timer) };
}
