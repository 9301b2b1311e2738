// The terminal: a login shell started as a PTY background process, shown by xterm.js over the
// process WebSocket (src/api/proc_ws.h). Output bytes go to xterm, which interprets escape
// sequences itself and never makes HTML of them; OSC 8 links do nothing unless clicked, and then
// open only http(s) URLs in a new tab without opener or referrer. The size follows the element
// (ResizeObserver + the fit addon) and is sent as a resize message.
import { Terminal } from '@xterm/xterm';
import { FitAddon } from '@xterm/addon-fit';
import { api, apiWebSocket } from '../api';
import { h, replace } from '../dom';

export interface TerminalView {
  el: HTMLElement;
  dispose: () => void;
}

const SHELL = 'if command -v bash >/dev/null 2>&1; then exec bash -l; else exec sh -l; fi';

export function terminalView(sandboxId: string): TerminalView {
  const status = h('p', { class: 'muted', id: 'term-status' }, 'starting a shell…');
  const box = h('div', { class: 'terminal', id: 'terminal' });
  const el = h('div', { class: 'terminal-wrap' }, status, box);
  const term = new Terminal({
    cursorBlink: true,
    convertEol: false,
    fontFamily: 'ui-monospace, "DejaVu Sans Mono", monospace',
    fontSize: 14,
    scrollback: 5000,
    linkHandler: {
      activate: (_e, uri) => {
        if (/^https?:\/\//i.test(uri)) window.open(uri, '_blank', 'noopener,noreferrer');
      },
    },
  });
  const fit = new FitAddon();
  term.loadAddon(fit);
  let ws: WebSocket | null = null;
  let disposed = false;
  let observer: ResizeObserver | null = null;

  const sendResize = () => {
    if (ws?.readyState === WebSocket.OPEN) {
      ws.send(JSON.stringify({ type: 'resize', cols: term.cols, rows: term.rows }));
    }
  };
  // Ctrl+Shift+C copies the selection, Ctrl+Shift+V pastes (Ctrl+C stays SIGINT).
  term.attachCustomKeyEventHandler((e) => {
    if (e.type === 'keydown' && e.ctrlKey && e.shiftKey && e.code === 'KeyC') {
      const sel = term.getSelection();
      if (sel) void navigator.clipboard?.writeText(sel);
      return false;
    }
    if (e.type === 'keydown' && e.ctrlKey && e.shiftKey && e.code === 'KeyV') {
      void navigator.clipboard?.readText().then((t) => term.paste(t));
      return false;
    }
    return true;
  });

  async function start(): Promise<void> {
    // Wait for the element to be in the document with a size, so the first fit is right.
    await new Promise((r) => requestAnimationFrame(r));
    if (disposed) return;
    term.open(box);
    fit.fit();
    let pid: number;
    try {
      const p = await api('POST', `/v1/sandboxes/${sandboxId}/processes`, {
        command: SHELL,
        pty: true,
        cols: term.cols,
        rows: term.rows,
        tag: 'console-terminal',
        env: { TERM: 'xterm-256color' },
      });
      pid = p.pid;
    } catch (e) {
      replace(status, 'could not start a shell: ' + (e as Error).message);
      return;
    }
    if (disposed) return;
    ws = apiWebSocket(`/v1/sandboxes/${sandboxId}/processes/${pid}/ws`);
    ws.binaryType = 'arraybuffer';
    ws.onopen = () => {
      replace(status, `shell pid ${pid} · ${term.cols}×${term.rows}`);
      status.setAttribute('data-state', 'open');
      sendResize();
      term.focus();
    };
    ws.onmessage = (m) => {
      if (m.data instanceof ArrayBuffer) {
        term.write(new Uint8Array(m.data));
        return;
      }
      let ev: any;
      try {
        ev = JSON.parse(String(m.data));
      } catch {
        return;
      }
      if (ev.type === 'exit') {
        replace(status, `shell exited (code ${ev.exit_code})`);
        status.setAttribute('data-state', 'exited');
      } else if (ev.type === 'error') {
        replace(status, `error: ${ev.message}`);
      } else if (ev.type === 'skipped') {
        term.write(`\r\n[${ev.bytes} bytes skipped]\r\n`);
      }
    };
    ws.onclose = (e) => {
      if (status.getAttribute('data-state') === 'open') {
        replace(status, `disconnected (${e.code}${e.reason ? ': ' + e.reason : ''})`);
        status.setAttribute('data-state', 'closed');
      }
    };
    const enc = new TextEncoder();
    term.onData((d) => ws?.readyState === WebSocket.OPEN && ws.send(enc.encode(d)));
    term.onBinary((d) => {
      const b = new Uint8Array(d.length);
      for (let i = 0; i < d.length; i++) b[i] = d.charCodeAt(i) & 0xff;
      if (ws?.readyState === WebSocket.OPEN) ws.send(b);
    });
    term.onResize(() => {
      sendResize();
      if (status.getAttribute('data-state') === 'open') replace(status, `shell pid ${pid} · ${term.cols}×${term.rows}`);
    });
    observer = new ResizeObserver(() => {
      try {
        fit.fit();
      } catch {
        /* not visible */
      }
    });
    observer.observe(box);
  }

  void start();
  return {
    el,
    dispose: () => {
      disposed = true;
      observer?.disconnect();
      // Closing detaches; the shell would keep running: end it with ^D first.
      if (ws?.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: 'close_stdin' }));
      ws?.close();
      term.dispose();
    },
  };
}
