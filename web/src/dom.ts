// Building DOM nodes. Everything a sandbox can influence (file names and contents, process
// output and commands, events) goes in as text nodes: this module has no way to set HTML.

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | EventListener | undefined | null>;

/** Makes <tag> with attributes (on* keys become listeners) and children (strings as text). */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') {
      el.addEventListener(k.slice(2), v as EventListener);
    } else if (k === 'value' && 'value' in el) {
      (el as HTMLInputElement).value = String(v);
    } else if (k === 'checked' && 'checked' in el) {
      (el as HTMLInputElement).checked = Boolean(v);
    } else {
      if (k === 'style' || k.startsWith('on')) throw new Error('attribute not allowed: ' + k);
      el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(el, ...children);
  return el;
}

/** Appends children (strings as text nodes, arrays flattened, falsy skipped). */
export function append(el: Node, ...children: (Child | Child[])[]): void {
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
}

/** Replaces the children of `el`. */
export function replace(el: Node, ...children: (Child | Child[])[]): void {
  while (el.firstChild) el.removeChild(el.firstChild);
  append(el, ...children);
}

/** "3 min", "2 h 5 min", "40 s" for a number of seconds. */
export function duration(seconds: number): string {
  if (!isFinite(seconds)) return '-';
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

/** 1536 -> "1.5 KiB". */
export function bytes(n: number): string {
  if (!isFinite(n)) return '-';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return (i === 0 ? String(n) : n.toFixed(1)) + ' ' + units[i];
}

/** A status line that shows progress ("taking snapshot… 3 s") and then the outcome. */
export class Progress {
  readonly el = h('div', { class: 'progress', role: 'status', 'aria-live': 'polite' });
  private timer = 0;

  /** Runs `work`, showing `what` and the elapsed seconds until it ends; rethrows its error. */
  async run<T>(what: string, work: () => Promise<T>): Promise<T> {
    const start = Date.now();
    const tick = () => replace(this.el, h('span', { class: 'spinner' }), ` ${what}… ${duration((Date.now() - start) / 1000)}`);
    // Busy until it ends: the previous outcome's class (ok/error) must not describe this work.
    this.el.className = 'progress';
    tick();
    window.clearInterval(this.timer);
    this.timer = window.setInterval(tick, 1000);
    try {
      const r = await work();
      this.done(`${what}: done in ${duration((Date.now() - start) / 1000)}`);
      return r;
    } catch (e) {
      this.fail(`${what}: ${errorText(e)}`);
      throw e;
    } finally {
      window.clearInterval(this.timer);
    }
  }

  /** Shows a fraction (0..1) of `what`. */
  fraction(what: string, f: number): void {
    this.el.className = 'progress';
    replace(this.el, h('progress', { max: '100', value: String(Math.round(f * 100)) }), ` ${what} ${Math.round(f * 100)}%`);
  }

  done(text: string): void {
    this.el.className = 'progress ok';
    replace(this.el, text);
  }

  fail(text: string): void {
    this.el.className = 'progress error';
    replace(this.el, text);
  }
}

/** The message of an error for a person. */
export function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
