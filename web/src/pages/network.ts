// A sandbox's network: its egress policy (read, replace) and its exposed ports as preview
// links (POST /previews makes a URL with a token; the console shows it as a link that opens
// in a new tab without opener or referrer).
import { api, ApiError } from '../api';
import { h, replace, errorText, Progress } from '../dom';

export function networkView(sandboxId: string): { el: HTMLElement; dispose: () => void } {
  const base = `/v1/sandboxes/${sandboxId}`;
  const progress = new Progress();
  const allow = h('textarea', { id: 'allow-out', rows: '4' });
  const deny = h('textarea', { id: 'deny-out', rows: '4' });
  const bw = h('input', { type: 'number', id: 'bandwidth', min: '0' });
  const policyBox = h('div', {});
  const previews = h('tbody', { id: 'preview-rows' });
  const port = h('input', { type: 'number', id: 'preview-port', min: '1', max: '65535', placeholder: '8000' });
  const lines = (t: string) => t.split('\n').map((s) => s.trim()).filter(Boolean);

  async function loadPolicy(): Promise<void> {
    try {
      const p = await api('GET', `${base}/network`);
      allow.value = (p.allow_out ?? []).join('\n');
      deny.value = (p.deny_out ?? []).join('\n');
      bw.value = String(p.bandwidth_kbit ?? 0);
    } catch (e) {
      replace(policyBox, h('p', { class: 'muted' }, e instanceof ApiError && e.status === 409 ? 'This sandbox has no network.' : errorText(e)));
    }
  }

  async function loadPreviews(): Promise<void> {
    try {
      const r = await api('GET', `${base}/previews`);
      replace(
        previews,
        (r.previews ?? []).map((p: any) =>
          h(
            'tr',
            {},
            h('td', { class: 'num' }, p.port),
            h('td', {}, p.url && /^https?:\/\//.test(p.url) ? h('a', { href: p.url, target: '_blank', rel: 'noopener noreferrer' }, p.url) : p.host),
            h('td', {}, p.expires_at ? new Date(p.expires_at).toLocaleString() : ''),
            h('td', {}, h('button', { class: 'danger', onclick: () => progress.run('revoking', () => api('DELETE', `${base}/previews/${p.id}`)).then(loadPreviews, () => {}) }, 'Revoke')),
          ),
        ),
      );
    } catch (e) {
      progress.fail('could not list previews: ' + errorText(e));
    }
  }

  replace(
    policyBox,
    h(
      'form',
      {
        class: 'grid-form',
        onsubmit: (e: Event) => {
          e.preventDefault();
          void progress
            .run('saving policy', () =>
              api('PUT', `${base}/network`, { allow_out: lines(allow.value), deny_out: lines(deny.value), bandwidth_kbit: Number(bw.value || 0) }),
            )
            .then(loadPolicy, () => {});
        },
      },
      h('label', {}, h('span', {}, 'Allow out'), allow),
      h('label', {}, h('span', {}, 'Deny out'), deny),
      h('label', {}, h('span', {}, 'Bandwidth (kbit/s, 0 = unlimited)'), bw),
      h('button', { type: 'submit' }, 'Save policy'),
    ),
  );

  const el = h(
    'div',
    {},
    progress.el,
    h('h2', {}, 'Egress policy'),
    policyBox,
    h('h2', {}, 'Exposed ports'),
    h(
      'form',
      {
        class: 'toolbar',
        onsubmit: (e: Event) => {
          e.preventDefault();
          void progress.run('making a preview URL', () => api('POST', `${base}/previews`, { port: Number(port.value) })).then(loadPreviews, () => {});
        },
      },
      port,
      h('button', { type: 'submit' }, 'Expose port'),
    ),
    h('table', {}, h('thead', {}, h('tr', {}, ['Port', 'URL', 'Expires', ''].map((t) => h('th', {}, t)))), previews),
  );
  void loadPolicy();
  void loadPreviews();
  return { el, dispose: () => {} };
}
