// The console's shell: sign-in, the navigation bar, and a hash router (#/sandboxes,
// #/sandbox/<id>/<tab>, #/overview, #/keys, #/events) over pages that each return an element
// and a dispose function (which stops their polling, streams and WebSockets).
import './style.css';
import '@xterm/xterm/css/xterm.css';
import { api, ApiError, forgetKey, getKey, setKey, setOnUnauthenticated } from './api';
import { h, replace, errorText } from './dom';
import { sandboxesPage } from './pages/sandboxes';
import { sandboxPage } from './pages/sandbox';
import { overviewPage } from './pages/overview';
import { keysPage } from './pages/keys';
import { eventsPage } from './pages/events';

export interface Page {
  el: HTMLElement;
  dispose?: () => void;
}

export interface Session {
  admin: boolean;
}

const app = document.getElementById('app')!;
let current: Page | null = null;
let session: Session | null = null;

function signOut(): void {
  forgetKey();
  session = null;
  current?.dispose?.();
  current = null;
  location.hash = '#/';
  render();
}

setOnUnauthenticated(() => {
  if (session) signOut();
});

function signInForm(message = ''): HTMLElement {
  const input = h('input', {
    type: 'password',
    id: 'api-key',
    name: 'api-key',
    autocomplete: 'off',
    placeholder: 'asb_…',
    required: true,
    'aria-label': 'API key',
  });
  const err = h('p', { class: 'error', id: 'signin-error' }, message);
  const form = h(
    'form',
    {
      class: 'signin',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        const key = input.value.trim();
        if (!key) return;
        setKey(key);
        try {
          await establish();
          render();
        } catch (x) {
          forgetKey();
          replace(err, x instanceof ApiError && x.status === 401 ? 'That key is not valid.' : errorText(x));
        }
      },
    },
    h('h1', {}, 'agent-sandbox'),
    h('label', { for: 'api-key' }, 'API key'),
    input,
    h('button', { type: 'submit', id: 'signin' }, 'Sign in'),
    err,
    h('p', { class: 'hint' }, 'The key stays in this tab (sessionStorage) and is sent only in request headers.'),
  );
  return form;
}

/** Checks the key and learns whether it is an admin key (GET /v1/keys needs the admin scope). */
async function establish(): Promise<void> {
  await api('GET', '/v1/sandboxes');
  let admin = false;
  try {
    await api('GET', '/v1/keys');
    admin = true;
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 403) throw e;
  }
  session = { admin };
}

function nav(): HTMLElement {
  const link = (href: string, text: string, id: string) => h('a', { href, id }, text);
  return h(
    'nav',
    {},
    h('span', { class: 'brand' }, 'agent-sandbox'),
    link('#/overview', 'Overview', 'nav-overview'),
    link('#/sandboxes', 'Sandboxes', 'nav-sandboxes'),
    link('#/events', 'Audit', 'nav-events'),
    session?.admin ? link('#/keys', 'Keys', 'nav-keys') : null,
    h('span', { class: 'spacer' }),
    h('span', { class: 'who' }, session?.admin ? 'admin key' : 'key'),
    h('button', { id: 'signout', onclick: signOut }, 'Sign out'),
  );
}

function route(): Page {
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  switch (parts[0]) {
    case 'sandbox':
      return sandboxPage(parts[1] ?? '', parts[2] ?? 'terminal');
    case 'overview':
      return overviewPage(session!);
    case 'keys':
      return keysPage();
    case 'events':
      return eventsPage();
    default:
      return sandboxesPage();
  }
}

function render(): void {
  current?.dispose?.();
  current = null;
  if (!session) {
    replace(app, signInForm());
    return;
  }
  current = route();
  replace(app, nav(), h('main', {}, current.el));
  for (const a of app.querySelectorAll('nav a')) {
    a.classList.toggle('active', location.hash.startsWith(a.getAttribute('href')!.replace(/s$/, '')));
  }
}

window.addEventListener('hashchange', () => {
  if (session) render();
});

async function start(): Promise<void> {
  if (getKey()) {
    try {
      await establish();
    } catch (e) {
      forgetKey();
      replace(app, signInForm(errorText(e)));
      return;
    }
  }
  render();
}

void start();
