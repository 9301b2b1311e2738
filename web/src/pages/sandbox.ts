// One sandbox: its summary (status, template, TTL; delete, extend, fork, pause and resume) and
// tabs for the terminal, files, processes, snapshots, network and ports, and its audit events.
import { api, Sandbox } from '../api';
import { h, replace, duration, errorText, Progress } from '../dom';
import type { Page } from '../main';
import { terminalView } from './terminal';
import { filesView } from './files';
import { processesView } from './processes';
import { snapshotsView } from './snapshots';
import { networkView } from './network';
import { eventsTable } from './events';

const TABS: [string, string][] = [
  ['terminal', 'Terminal'],
  ['files', 'Files'],
  ['processes', 'Processes'],
  ['snapshots', 'Snapshots'],
  ['network', 'Network & ports'],
  ['events', 'Audit'],
];

export function sandboxPage(id: string, tab: string): Page {
  const progress = new Progress();
  const summary = h('dl', { class: 'summary', id: 'sandbox-summary' });
  const body = h('div', { class: 'tab-body', id: 'tab-' + tab });
  let view: { el: HTMLElement; dispose: () => void } | null = null;
  let info: Sandbox | null = null;
  // Pause (a freeze), pause keeping only the files, resume: which show follows the status.
  const lifecycle = (btnId: string, label: string, title: string, what: string, path: string, body: object) =>
    h(
      'button',
      {
        id: btnId,
        title,
        hidden: true,
        onclick: () => progress.run(what, () => api('POST', `/v1/sandboxes/${id}/${path}`, body)).then(loadInfo, () => {}),
      },
      label,
    );
  const pauseBtn = lifecycle('pause-sandbox', 'Pause', 'Stop every process where it is, memory kept', 'pausing', 'pause', {});
  const pauseFilesBtn = lifecycle(
    'pause-sandbox-files',
    'Pause (files only)',
    'End every process and keep only /workspace: no memory or quota slot is held; resume starts it afresh',
    'pausing, files only',
    'pause',
    { memory: false },
  );
  const resumeBtn = lifecycle('resume-sandbox', 'Resume', 'Let it run again', 'resuming', 'resume', {});

  async function loadInfo(): Promise<void> {
    try {
      info = await api<Sandbox>('GET', `/v1/sandboxes/${id}`);
      const left = info.expires_at ? (Date.parse(info.expires_at) - Date.now()) / 1000 : Infinity;
      const item = (k: string, v: string | number) => [h('dt', {}, k), h('dd', {}, String(v))];
      const paused = info.status === 'paused';
      pauseBtn.hidden = pauseFilesBtn.hidden = info.status !== 'running';
      resumeBtn.hidden = !paused;
      const status = paused && info.paused_memory === false ? 'paused (files only)' : info.status;
      replace(
        summary,
        item('Status', status),
        item('Template', info.template),
        item('Backend', info.backend ?? ''),
        item('Limits', `${info.cpus} CPU · ${info.memory_mb} MiB · ${info.workspace_mb} MiB disk`),
        item('Network', info.network ? 'on' : 'off'),
        item('Created', new Date(info.created_at).toLocaleString()),
        item('TTL left', info.expires_at ? duration(left) : 'never'),
        info.forked_from_snapshot_id ? item('Forked from', info.forked_from_snapshot_id) : [],
        info.last_rollback
          ? item('Rolled back to', `${info.last_rollback.snapshot_id} at ${new Date(info.last_rollback.at).toLocaleString()}`)
          : [],
      );
    } catch (e) {
      replace(summary, h('p', { class: 'error' }, errorText(e)));
    }
  }

  function makeView(): { el: HTMLElement; dispose: () => void } {
    switch (tab) {
      case 'files':
        return filesView(id, info?.default_workdir || '/workspace');
      case 'processes':
        return processesView(id);
      case 'snapshots':
        return snapshotsView(id, () => void loadInfo());
      case 'network':
        return networkView(id);
      case 'events':
        return eventsTable(`/v1/sandboxes/${id}/events`);
      default:
        return terminalView(id);
    }
  }

  const timer = window.setInterval(loadInfo, 5000);
  void loadInfo().then(() => {
    view = makeView();
    replace(body, view.el);
  });

  const el = h(
    'section',
    { id: 'page-sandbox' },
    h(
      'div',
      { class: 'titlebar' },
      h('h1', { class: 'mono' }, id),
      h(
        'button',
        {
          onclick: () =>
            progress
              .run('extending TTL', () => {
                const left = info?.expires_at ? (Date.parse(info.expires_at) - Date.now()) / 1000 : 0;
                return api('POST', `/v1/sandboxes/${id}/timeout`, { timeout_seconds: Math.round(Math.max(0, left) + 3600) });
              })
              .then(loadInfo, () => {}),
        },
        'TTL +1 h',
      ),
      h(
        'button',
        {
          id: 'fork-sandbox',
          title: 'A new sandbox with this one\'s workspace as it is now (its own copy); this one runs on',
          onclick: () =>
            progress
              .run('forking', () =>
                api<{ forks: { sandbox?: Sandbox; error?: { message: string } }[] }>('POST', `/v1/sandboxes/${id}/fork`, {
                  count: 1,
                }),
              )
              .then((r) => {
                const child = r.forks[0]?.sandbox;
                if (child) location.hash = `#/sandbox/${encodeURIComponent(child.id)}/files`;
                else progress.fail('forking: ' + (r.forks[0]?.error?.message ?? 'no sandbox was made'));
              }, () => {}),
        },
        'Fork',
      ),
      pauseBtn,
      pauseFilesBtn,
      resumeBtn,
      h(
        'button',
        {
          class: 'danger',
          id: 'delete-sandbox',
          onclick: () =>
            progress.run('deleting', () => api('DELETE', `/v1/sandboxes/${id}`)).then(() => (location.hash = '#/sandboxes'), () => {}),
        },
        'Delete',
      ),
    ),
    progress.el,
    summary,
    h(
      'div',
      { class: 'tabs', role: 'tablist' },
      TABS.map(([k, label]) =>
        h('a', { href: `#/sandbox/${encodeURIComponent(id)}/${k}`, class: k === tab ? 'active' : '', id: 'tab-link-' + k, role: 'tab' }, label),
      ),
    ),
    body,
  );
  return {
    el,
    dispose: () => {
      window.clearInterval(timer);
      view?.dispose();
    },
  };
}
