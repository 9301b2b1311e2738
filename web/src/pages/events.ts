// The audit trail: GET /v1/events (all the key may see) or one sandbox's events, newest
// first, paged with next_cursor.
import { api, q } from '../api';
import { h, replace, errorText } from '../dom';
import type { Page } from '../main';

interface Event {
  seq: number;
  time: string;
  key_id: string | null;
  sandbox_id: string | null;
  action: string;
  target: string;
  status: number;
  result: string;
  duration_ms: number;
}

export function eventsTable(path: string): { el: HTMLElement; dispose: () => void } {
  const rows = h('tbody', { id: 'event-rows' });
  const more = h('button', {}, 'More');
  const status = h('p', { class: 'muted' });
  let cursor: string | null = null;

  async function load(reset: boolean): Promise<void> {
    try {
      const r = await api<{ events: Event[]; next_cursor: string | null }>('GET', q(path, { limit: 100, cursor: reset ? undefined : (cursor ?? undefined) }));
      if (reset) replace(rows);
      for (const e of r.events) {
        rows.appendChild(
          h(
            'tr',
            {},
            h('td', {}, new Date(e.time).toLocaleString()),
            h('td', {}, e.action),
            h('td', { class: 'mono wrap' }, e.target),
            h('td', { class: 'mono' }, e.sandbox_id ?? ''),
            h('td', { class: 'mono' }, e.key_id ?? ''),
            h('td', { class: 'num' }, e.status),
            h('td', {}, e.result),
            h('td', { class: 'num' }, `${e.duration_ms} ms`),
          ),
        );
      }
      cursor = r.next_cursor;
      more.hidden = !cursor;
      replace(status, `${rows.children.length} events`);
    } catch (e) {
      replace(status, 'could not read events: ' + errorText(e));
    }
  }
  more.addEventListener('click', () => void load(false));
  const el = h(
    'div',
    {},
    h('div', { class: 'toolbar' }, h('button', { onclick: () => void load(true) }, 'Refresh'), status),
    h('table', { id: 'events' }, h('thead', {}, h('tr', {}, ['Time', 'Action', 'Target', 'Sandbox', 'Key', 'Status', 'Result', 'Took'].map((t) => h('th', {}, t)))), rows),
    more,
  );
  void load(true);
  return { el, dispose: () => {} };
}

export function eventsPage(): Page {
  const t = eventsTable('/v1/events');
  return { el: h('section', { id: 'page-events' }, h('h1', {}, 'Audit events'), t.el), dispose: t.dispose };
}
