// Sandboxes: the live list (polled every 3 s) with a filter, the create form, delete and
// extend TTL.
import { api, Sandbox } from '../api';
import { h, replace, duration, errorText, Progress } from '../dom';
import type { Page } from '../main';

function lines(text: string): string[] {
  return text
    .split('\n')
    .map((s) => s.trim())
    .filter(Boolean);
}

function num(form: HTMLFormElement, name: string): number | undefined {
  const el = form.elements.namedItem(name) as HTMLInputElement | null;
  if (!el || el.value.trim() === '') return undefined;
  return Number(el.value);
}

function createForm(progress: Progress, onCreated: (s: Sandbox) => void): HTMLElement {
  const templates = h('select', { name: 'template', id: 'create-template' });
  api('GET', '/v1/templates')
    .then((r) => {
      for (const t of r.templates ?? []) templates.appendChild(h('option', { value: t.name }, t.name));
    })
    .catch(() => templates.appendChild(h('option', { value: '' }, '(server default)')));
  // The backends the server runs; one it cannot run here is shown, disabled, with why.
  const backends = h('select', { name: 'backend', id: 'create-backend' });
  api('GET', '/v1/backends')
    .then((r) => {
      for (const b of r.backends ?? []) {
        const label = b.available ? b.name + (b.accelerator ? ` (${b.accelerator})` : '') : `${b.name} (unavailable)`;
        const o = h('option', { value: b.name, title: b.reason ?? '' }, label) as HTMLOptionElement;
        o.disabled = !b.available;
        o.selected = b.name === r.default;
        backends.appendChild(o);
      }
    })
    .catch(() => backends.appendChild(h('option', { value: '' }, '(server default)')));
  const field = (label: string, input: HTMLElement) => h('label', {}, h('span', {}, label), input);
  const form: HTMLFormElement = h(
    'form',
    {
      id: 'create-form',
      class: 'card grid-form',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        const body: Record<string, unknown> = {};
        const t = templates.value;
        if (t) body.template = t;
        if (backends.value) body.backend = backends.value;
        for (const n of ['cpus', 'memory_mb', 'workspace_mb', 'timeout_seconds']) {
          const v = num(form, n);
          if (v !== undefined) body[n] = v;
        }
        const network = (form.elements.namedItem('network') as HTMLInputElement).checked;
        body.network = network;
        if (network) {
          const allow = lines((form.elements.namedItem('allow_out') as HTMLTextAreaElement).value);
          const deny = lines((form.elements.namedItem('deny_out') as HTMLTextAreaElement).value);
          if (allow.length || deny.length) body.network_policy = { allow_out: allow, deny_out: deny };
        }
        try {
          const s = await progress.run('creating sandbox', () => api<Sandbox>('POST', '/v1/sandboxes', body));
          onCreated(s);
        } catch {
          /* shown by progress */
        }
      },
    },
    h('h2', {}, 'New sandbox'),
    field('Template', templates),
    field('Backend', backends),
    field('CPUs', h('input', { name: 'cpus', type: 'number', step: '0.1', min: '0.1', placeholder: 'default' })),
    field('Memory (MiB)', h('input', { name: 'memory_mb', type: 'number', min: '16', placeholder: 'default' })),
    field('Workspace (MiB)', h('input', { name: 'workspace_mb', type: 'number', min: '1', placeholder: 'default' })),
    field('TTL (s)', h('input', { name: 'timeout_seconds', type: 'number', min: '1', placeholder: 'default' })),
    field('Network', h('input', { name: 'network', type: 'checkbox' })),
    field('Allow out (one rule a line)', h('textarea', { name: 'allow_out', rows: '2', placeholder: 'github.com' })),
    field('Deny out', h('textarea', { name: 'deny_out', rows: '2', placeholder: '10.0.0.0/8' })),
    h('button', { type: 'submit', id: 'create-submit' }, 'Create'),
  );
  return form;
}

export function sandboxesPage(): Page {
  const progress = new Progress();
  const filter = h('input', { type: 'search', id: 'filter', placeholder: 'filter by id, template, backend or status' });
  const body = h('tbody', { id: 'sandbox-rows' });
  const status = h('p', { class: 'muted' });
  let all: Sandbox[] = [];
  let timer = 0;
  // An admin key's list carries each sandbox's owner (the key lineage that made it): a column.
  let withOwner = false;
  const headRow = h('tr', {});

  const row = (s: Sandbox) => {
    const now = Date.now();
    const age = (now - Date.parse(s.created_at)) / 1000;
    const left = s.expires_at ? (Date.parse(s.expires_at) - now) / 1000 : Infinity;
    return h(
      'tr',
      { 'data-id': s.id },
      h('td', {}, h('a', { href: `#/sandbox/${encodeURIComponent(s.id)}/terminal`, class: 'mono' }, s.id)),
      h('td', { class: 'status-' + s.status }, s.status),
      withOwner ? h('td', { class: 'mono owner' }, s.owner ?? '') : null,
      h('td', {}, s.template),
      h('td', { class: 'backend' }, s.backend ?? ''),
      h('td', {}, duration(age)),
      h('td', {}, s.expires_at ? duration(left) : 'never'),
      h('td', {}, `${s.cpus} CPU · ${s.memory_mb} MiB${s.network ? ' · net' : ''}`),
      h(
        'td',
        { class: 'actions' },
        h(
          'button',
          {
            title: 'Extend the TTL by one hour',
            onclick: () =>
              progress
                .run('extending TTL', () =>
                  api('POST', `/v1/sandboxes/${s.id}/timeout`, {
                    timeout_seconds: Math.round(Math.max(0, isFinite(left) ? left : 0) + 3600),
                  }),
                )
                .then(refresh, () => {}),
          },
          '+1 h',
        ),
        h(
          'button',
          {
            class: 'danger',
            onclick: () =>
              progress.run('deleting ' + s.id, () => api('DELETE', `/v1/sandboxes/${s.id}`)).then(refresh, () => {}),
          },
          'Delete',
        ),
      ),
    );
  };

  const draw = () => {
    const f = filter.value.trim().toLowerCase();
    const shown = all.filter((s) => !f || [s.id, s.template, s.backend ?? '', s.status, s.owner ?? ''].some((v) => v.toLowerCase().includes(f)));
    withOwner = all.some((s) => typeof s.owner === 'string');
    const heads = ['Id', 'Status', ...(withOwner ? ['Owner'] : []), 'Template', 'Backend', 'Age', 'TTL left', 'Limits', ''];
    replace(headRow, ...heads.map((t) => h('th', {}, t)));
    replace(body, shown.map(row));
    replace(status, `${shown.length} of ${all.length} sandboxes`);
  };

  async function refresh(): Promise<void> {
    try {
      const r = await api<{ sandboxes: Sandbox[] }>('GET', '/v1/sandboxes');
      all = r.sandboxes;
      draw();
    } catch (e) {
      replace(status, 'could not list sandboxes: ' + errorText(e));
    }
  }

  filter.addEventListener('input', draw);
  draw();  // the header, before the first list arrives
  void refresh();
  timer = window.setInterval(refresh, 3000);
  const el = h(
    'section',
    { id: 'page-sandboxes' },
    h('h1', {}, 'Sandboxes'),
    progress.el,
    h('div', { class: 'toolbar' }, filter, status),
    h(
      'table',
      { id: 'sandboxes' },
      h(
        'thead',
        {},
        headRow,
      ),
      body,
    ),
    createForm(progress, (s) => {
      location.hash = `#/sandbox/${encodeURIComponent(s.id)}/terminal`;
    }),
  );
  return { el, dispose: () => window.clearInterval(timer) };
}
