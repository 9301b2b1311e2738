// The REST API of agent-sandbox (api/openapi.json) as the console uses it. The key lives in
// sessionStorage (this tab only, gone when it closes; sign-out removes it) and travels only in
// the Authorization header, or, for the terminal's WebSocket, in a subprotocol (ADR 0022):
// never in a URL.

const KEY = 'agent-sandbox.key';

export function getKey(): string | null {
  return sessionStorage.getItem(KEY);
}
export function setKey(key: string): void {
  sessionStorage.setItem(KEY, key);
}
export function forgetKey(): void {
  sessionStorage.removeItem(KEY);
}

/** An error answer of the API: {"error":{"code","message"}}. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Called when the server says the key is no good (401): the app signs out. */
export let onUnauthenticated: () => void = () => {};
export function setOnUnauthenticated(f: () => void): void {
  onUnauthenticated = f;
}

function headers(extra: Record<string, string> = {}): Record<string, string> {
  const k = getKey();
  return { ...(k ? { Authorization: 'Bearer ' + k } : {}), ...extra };
}

async function check(r: Response): Promise<Response> {
  if (r.ok) return r;
  let code = 'error';
  let message = `HTTP ${r.status}`;
  try {
    const j = await r.json();
    if (j && j.error) {
      code = String(j.error.code);
      message = String(j.error.message);
    }
  } catch {
    /* not JSON */
  }
  if (r.status === 401) onUnauthenticated();
  throw new ApiError(r.status, code, message);
}

/** A JSON call: `body` is sent as JSON; the answer is parsed (null for 204). */
export async function api<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  const r = await fetch(path, {
    method,
    headers: headers(body === undefined ? {} : { 'Content-Type': 'application/json' }),
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: 'no-store',
    credentials: 'omit',
    referrerPolicy: 'no-referrer',
  });
  await check(r);
  if (r.status === 204) return null as T;
  return (await r.json()) as T;
}

/** A call whose answer is raw bytes (file reads, archives). */
export async function apiBlob(path: string): Promise<Blob> {
  const r = await fetch(path, { headers: headers(), cache: 'no-store', credentials: 'omit' });
  await check(r);
  return r.blob();
}

/** A streaming call (NDJSON): calls `onLine` for each line until the stream ends or `signal`. */
export async function apiLines(path: string, onLine: (j: any) => void, signal: AbortSignal): Promise<void> {
  const r = await fetch(path, { headers: headers(), cache: 'no-store', credentials: 'omit', signal });
  await check(r);
  const reader = r.body!.getReader();
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.trim()) onLine(JSON.parse(line));
    }
  }
}

/** PUT of raw bytes with upload progress (fetch has none): XMLHttpRequest. */
export function apiUpload(path: string, body: Blob | string, onProgress: (f: number) => void): Promise<any> {
  return new Promise((resolve, reject) => {
    const x = new XMLHttpRequest();
    x.open('PUT', path);
    for (const [k, v] of Object.entries(headers({ 'Content-Type': 'application/octet-stream' }))) x.setRequestHeader(k, v);
    x.upload.onprogress = (e) => e.lengthComputable && onProgress(e.loaded / e.total);
    x.onerror = () => reject(new ApiError(0, 'network', 'upload failed: connection lost'));
    x.onload = () => {
      let j: any = null;
      try {
        j = JSON.parse(x.responseText);
      } catch {
        /* empty */
      }
      if (x.status >= 200 && x.status < 300) return resolve(j);
      if (x.status === 401) onUnauthenticated();
      reject(new ApiError(x.status, j?.error?.code ?? 'error', j?.error?.message ?? `HTTP ${x.status}`));
    };
    x.send(body);
  });
}

/** base64url of UTF-8 text, no padding (RFC 4648 section 5). */
export function base64Url(text: string): string {
  const b = new TextEncoder().encode(text);
  let s = '';
  for (const c of b) s += String.fromCharCode(c);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** A WebSocket to `path` that authenticates with the key in a subprotocol (ADR 0022). */
export function apiWebSocket(path: string): WebSocket {
  const url = new URL(path, location.href);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  const key = getKey() ?? '';
  return new WebSocket(url.toString(), ['agent-sandbox.v1', 'agent-sandbox.bearer.' + base64Url(key)]);
}

/** `path` with query parameters, each encoded. */
export function q(path: string, params: Record<string, string | number | undefined>): string {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) u.set(k, String(v));
  const s = u.toString();
  return s ? `${path}?${s}` : path;
}

export interface Sandbox {
  id: string;
  status: string;
  template: string;
  /** The isolation it runs on: "ns" or "microvm". */
  backend?: string;
  cpus: number;
  memory_mb: number;
  workspace_mb: number;
  network: boolean;
  created_at: string;
  expires_at: string | null;
  timeout_seconds: number;
  source_snapshot_id: string | null;
  /** The key lineage that made it; only in an admin key's list. */
  owner?: string;
  /** Its origin: the snapshot it was forked from (a rollback never changes it). */
  forked_from_snapshot_id?: string | null;
  /** Its last rollback, or null. */
  last_rollback?: { snapshot_id: string; at: string } | null;
  default_workdir: string;
  /** While paused: true when its memory was kept, false when only its files were; else null. */
  paused_memory?: boolean | null;
}
