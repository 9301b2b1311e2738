// Background processes of a sandbox: the list (polled), the output of one (its NDJSON stream,
// shown as text), start one, kill one.
import { api, apiLines, q } from '../api';
import { h, replace, errorText, Progress } from '../dom';

interface Proc {
  pid: number;
  tag: string;
  argv: string[];
  command: string | null;
  state: string;
  exit_code: number | null;
  started_at: string;
  pty: boolean;
  output_bytes: number;
}

export function processesView(sandboxId: string): { el: HTMLElement; dispose: () => void } {
  const base = `/v1/sandboxes/${sandboxId}/processes`;
  const progress = new Progress();
  const rows = h('tbody', { id: 'process-rows' });
  const output = h('pre', { class: 'output', id: 'process-output' });
  const outTitle = h('h3', { class: 'mono' });
  let follow: AbortController | null = null;

  function show(p: Proc): void {
    follow?.abort();
    follow = new AbortController();
    replace(outTitle, `pid ${p.pid}: ${p.command ?? p.argv.join(' ')}`);
    replace(output, '');
    void apiLines(
      q(`${base}/${p.pid}/stream`, { replay_bytes: 65536 }),
      (ev) => {
        if (ev.type === 'stdout' || ev.type === 'stderr') {
          output.appendChild(document.createTextNode(String(ev.data ?? '')));
        } else if (ev.type === 'exit') {
          output.appendChild(document.createTextNode(`\n[exited: ${ev.exit_code}]\n`));
        } else if (ev.type === 'skipped') {
          output.appendChild(document.createTextNode(`\n[${ev.bytes} bytes skipped]\n`));
        }
      },
      follow.signal,
    ).catch((e) => {
      if ((e as Error).name !== 'AbortError') output.appendChild(document.createTextNode('\n[' + errorText(e) + ']'));
    });
  }

  async function load(): Promise<void> {
    try {
      const r = await api<{ processes: Proc[] }>('GET', base);
      replace(
        rows,
        r.processes.map((p) =>
          h(
            'tr',
            { 'data-pid': String(p.pid) },
            h('td', { class: 'num' }, p.pid),
            h('td', { class: 'mono' }, p.command ?? p.argv.join(' ')),
            h('td', {}, p.tag),
            h('td', {}, p.state === 'running' ? 'running' : `exited ${p.exit_code}`),
            h('td', {}, p.pty ? 'pty' : ''),
            h(
              'td',
              { class: 'actions' },
              h('button', { onclick: () => show(p) }, 'Output'),
              p.state === 'running'
                ? h('button', { class: 'danger', onclick: () => progress.run('killing ' + p.pid, () => api('DELETE', `${base}/${p.pid}`)).then(load, () => {}) }, 'Kill')
                : null,
            ),
          ),
        ),
      );
    } catch (e) {
      progress.fail('could not list processes: ' + errorText(e));
    }
  }

  const cmd = h('input', { type: 'text', id: 'process-command', placeholder: 'command, e.g. python3 -m http.server 8000' });
  const timer = window.setInterval(load, 3000);
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
          if (!cmd.value.trim()) return;
          void progress
            .run('starting', () => api('POST', base, { command: cmd.value, tag: 'console' }))
            .then((p) => {
              cmd.value = '';
              void load();
              show(p);
            }, () => {});
        },
      },
      cmd,
      h('button', { type: 'submit', id: 'process-start' }, 'Start'),
    ),
    h('table', { id: 'processes' }, h('thead', {}, h('tr', {}, ['Pid', 'Command', 'Tag', 'State', '', ''].map((t) => h('th', {}, t)))), rows),
    outTitle,
    output,
  );
  void load();
  return {
    el,
    dispose: () => {
      window.clearInterval(timer);
      follow?.abort();
    },
  };
}
