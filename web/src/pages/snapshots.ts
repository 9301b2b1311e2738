// Snapshots of a sandbox: take one (with progress), roll back to one, fork one into a new
// sandbox, delete one.
import { api } from '../api';
import { h, replace, bytes, errorText, Progress } from '../dom';

interface Snapshot {
  id: string;
  sandbox_id: string | null;
  name: string | null;
  size_bytes: number;
  created_at: string;
}

export function snapshotsView(sandboxId: string, onChange: () => void): { el: HTMLElement; dispose: () => void } {
  const progress = new Progress();
  const rows = h('tbody', { id: 'snapshot-rows' });
  const name = h('input', { type: 'text', id: 'snapshot-name', placeholder: 'name (optional)' });

  async function load(): Promise<void> {
    try {
      const r = await api<{ snapshots: Snapshot[] }>('GET', '/v1/snapshots');
      const mine = r.snapshots.filter((s) => s.sandbox_id === sandboxId);
      replace(
        rows,
        mine.map((s) =>
          h(
            'tr',
            { 'data-id': s.id },
            h('td', { class: 'mono' }, s.id),
            h('td', {}, s.name ?? ''),
            h('td', {}, new Date(s.created_at).toLocaleString()),
            h('td', { class: 'num' }, bytes(s.size_bytes)),
            h(
              'td',
              { class: 'actions' },
              h(
                'button',
                {
                  class: 'rollback',
                  onclick: () =>
                    progress
                      .run('rolling back to ' + (s.name || s.id), () =>
                        api('POST', `/v1/sandboxes/${sandboxId}/rollback`, { snapshot_id: s.id }),
                      )
                      .then(onChange, () => {}),
                },
                'Roll back',
              ),
              h(
                'button',
                {
                  onclick: () =>
                    progress
                      .run('forking ' + (s.name || s.id), () => api('POST', `/v1/snapshots/${s.id}/fork`, {}))
                      .then((sb) => (location.hash = `#/sandbox/${encodeURIComponent(sb.id)}/files`), () => {}),
                },
                'Fork',
              ),
              h(
                'button',
                {
                  class: 'danger',
                  onclick: () => progress.run('deleting ' + s.id, () => api('DELETE', `/v1/snapshots/${s.id}`)).then(load, () => {}),
                },
                'Delete',
              ),
            ),
          ),
        ),
      );
    } catch (e) {
      progress.fail('could not list snapshots: ' + errorText(e));
    }
  }

  const el = h(
    'div',
    {},
    progress.el,
    h(
      'form',
      {
        class: 'toolbar',
        onsubmit: (e: Event) => {
          e.preventDefault();
          const body = name.value.trim() ? { name: name.value.trim() } : {};
          void progress
            .run('taking snapshot', () => api('POST', `/v1/sandboxes/${sandboxId}/snapshots`, body))
            .then(() => {
              name.value = '';
              return load();
            }, () => {});
        },
      },
      name,
      h('button', { type: 'submit', id: 'take-snapshot' }, 'Take snapshot'),
    ),
    h(
      'table',
      { id: 'snapshots' },
      h('thead', {}, h('tr', {}, ['Id', 'Name', 'Taken', 'Size', ''].map((t) => h('th', {}, t)))),
      rows,
    ),
  );
  void load();
  return { el, dispose: () => {} };
}
