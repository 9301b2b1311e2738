// API keys (admin keys only): the list; create one (its secret shown once, with a copy
// button); revoke, enable, rotate (the new secret shown once), delete.
import { api } from '../api';
import { h, replace, errorText, Progress } from '../dom';
import type { Page } from '../main';

export function keysPage(): Page {
  const progress = new Progress();
  const rows = h('tbody', { id: 'key-rows' });
  const secret = h('div', { id: 'new-secret' });

  function showSecret(k: any): void {
    const box = h('input', { type: 'text', readonly: true, class: 'mono', id: 'secret-value', value: k.key });
    replace(
      secret,
      h(
        'div',
        { class: 'card secret' },
        h('p', {}, `The secret of ${k.name || k.id} — shown this once; it cannot be read again:`),
        box,
        h('button', { onclick: () => void navigator.clipboard?.writeText(k.key) }, 'Copy'),
        h('button', { onclick: () => replace(secret) }, 'Done'),
      ),
    );
  }

  async function load(): Promise<void> {
    try {
      const r = await api('GET', '/v1/keys');
      replace(
        rows,
        (r.keys ?? []).map((k: any) =>
          h(
            'tr',
            { 'data-id': k.id },
            h('td', { class: 'mono' }, k.id),
            h('td', {}, k.name),
            h('td', { class: 'mono' }, k.prefix),
            h('td', {}, (k.scopes ?? []).join(', ')),
            h('td', {}, k.status),
            h('td', {}, k.last_used_at ? new Date(k.last_used_at).toLocaleString() : 'never'),
            h(
              'td',
              { class: 'actions' },
              k.enabled
                ? h('button', { onclick: () => progress.run('revoking ' + k.id, () => api('POST', `/v1/keys/${k.id}/revoke`)).then(load, () => {}) }, 'Revoke')
                : h('button', { onclick: () => progress.run('enabling ' + k.id, () => api('POST', `/v1/keys/${k.id}/enable`)).then(load, () => {}) }, 'Enable'),
              h(
                'button',
                {
                  onclick: () =>
                    progress.run('rotating ' + k.id, () => api('POST', `/v1/keys/${k.id}/rotate`, {})).then((n) => {
                      showSecret(n);
                      return load();
                    }, () => {}),
                },
                'Rotate',
              ),
              h('button', { class: 'danger', onclick: () => progress.run('deleting ' + k.id, () => api('DELETE', `/v1/keys/${k.id}`)).then(load, () => {}) }, 'Delete'),
            ),
          ),
        ),
      );
    } catch (e) {
      progress.fail('could not list keys: ' + errorText(e));
    }
  }

  const name = h('input', { type: 'text', id: 'key-name', placeholder: 'name', required: true });
  const scope = (s: string, on: boolean) => h('label', { class: 'inline' }, h('input', { type: 'checkbox', name: 'scope', value: s, checked: on }), s);
  const rate = h('input', { type: 'number', id: 'key-rate', min: '0', placeholder: 'rate/min' });
  const maxSb = h('input', { type: 'number', id: 'key-max', min: '0', placeholder: 'max sandboxes' });
  const expires = h('input', { type: 'text', id: 'key-expires', placeholder: 'expires in, e.g. 30d' });
  const form: HTMLFormElement = h(
    'form',
    {
      class: 'toolbar card',
      id: 'key-form',
      onsubmit: (e: Event) => {
        e.preventDefault();
        const scopes = Array.from(form.querySelectorAll<HTMLInputElement>('input[name=scope]:checked')).map((i) => i.value);
        const body: Record<string, unknown> = { name: name.value.trim(), scopes };
        if (rate.value) body.rate_limit = Number(rate.value);
        if (maxSb.value) body.max_sandboxes = Number(maxSb.value);
        if (expires.value.trim()) body.expires_in = expires.value.trim();
        void progress.run('creating key', () => api('POST', '/v1/keys', body)).then((k) => {
          showSecret(k);
          name.value = '';
          return load();
        }, () => {});
      },
    },
    name,
    scope('exec', true),
    scope('metrics', false),
    scope('admin', false),
    rate,
    maxSb,
    expires,
    h('button', { type: 'submit', id: 'key-create' }, 'Create key'),
  );
  void load();
  return {
    el: h(
      'section',
      { id: 'page-keys' },
      h('h1', {}, 'API keys'),
      progress.el,
      form,
      secret,
      h('table', { id: 'keys' }, h('thead', {}, h('tr', {}, ['Id', 'Name', 'Prefix', 'Scopes', 'Status', 'Last used', ''].map((t) => h('th', {}, t)))), rows),
    ),
  };
}
