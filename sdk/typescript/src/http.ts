// The HTTP transport: native fetch, one error mapping.
import { NotFoundError, SandboxAPIError, SandboxConnectionError } from "./errors.js";

export type Query = Record<string, string | number | boolean | undefined | null>;

export interface RequestOptions {
  query?: Query;
  json?: unknown;
  body?: Uint8Array;
  accept?: string;
  /** Extra request headers (e.g. Idempotency-Key). */
  headers?: Record<string, string>;
  /** Aborts the request, and reading its body (the rejection is signal.reason). */
  signal?: AbortSignal;
}

/** Sends requests to one server (internal; used by Sandbox and Session). */
export class Transport {
  readonly baseUrl: string;
  readonly apiKey: string | undefined;

  constructor(baseUrl: string, apiKey: string | undefined) {
    let u: URL;
    try {
      u = new URL(baseUrl);
    } catch {
      throw new TypeError(`baseUrl must be an http(s) URL, got ${JSON.stringify(baseUrl)}`);
    }
    if (u.protocol !== "http:" && u.protocol !== "https:") {
      throw new TypeError(`baseUrl must be an http(s) URL, got ${JSON.stringify(baseUrl)}`);
    }
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.apiKey = apiKey;
  }

  /** Sends one request; resolves with the Response when its status is 2xx. */
  async send(method: string, path: string, opts: RequestOptions = {}): Promise<Response> {
    let url = this.baseUrl + path;
    if (opts.query) {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(opts.query)) {
        if (v !== undefined && v !== null) q.set(k, String(v));
      }
      const s = q.toString();
      if (s) url += "?" + s;
    }
    const headers: Record<string, string> = { Accept: opts.accept ?? "application/json" };
    if (this.apiKey) headers["Authorization"] = `Bearer ${this.apiKey}`;
    if (opts.headers) Object.assign(headers, opts.headers);
    let body: BodyInit | undefined;
    if (opts.json !== undefined) {
      body = JSON.stringify(opts.json);
      headers["Content-Type"] = "application/json";
    } else if (opts.body !== undefined) {
      body = opts.body;
      headers["Content-Type"] = "application/octet-stream";
    } else if (method === "POST" || method === "PUT") {
      body = "";
    }
    let res: Response;
    try {
      res = await fetch(url, { method, headers, body, signal: opts.signal });
    } catch (e) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      throw new SandboxConnectionError(`${method} ${url}: ${(e as Error).message}`, { cause: e });
    }
    if (res.status >= 400) throw await apiError(res);
    return res;
  }

  /** Sends a request and decodes its JSON answer (undefined for 204). */
  async json<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const res = await this.send(method, path, opts);
    const text = await readText(res, method, path);
    return (text ? JSON.parse(text) : undefined) as T;
  }

  /** Sends a request and returns its body as bytes. */
  async bytes(method: string, path: string, opts: RequestOptions = {}): Promise<Uint8Array> {
    const res = await this.send(method, path, opts);
    try {
      return new Uint8Array(await res.arrayBuffer());
    } catch (e) {
      throw new SandboxConnectionError(`${method} ${path}: reading the answer: ${e}`, {
        cause: e,
      });
    }
  }
}

/**
 * Yields the JSON objects of an NDJSON answer, one per non-empty line, as they arrive
 * (internal; used by execStream and streamProcess). The connection is released when the
 * iteration ends, also when the consumer stops early. Throws SandboxConnectionError when the
 * body breaks or a line is not JSON, signal.reason when signal (the request's) aborted it.
 */
export async function* ndjsonObjects(
  res: Response,
  what: string,
  signal?: AbortSignal,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
): AsyncGenerator<any> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  try {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (e) {
        if (signal?.aborted) throw signal.reason;
        throw new SandboxConnectionError(`${what} broke: ${(e as Error).message}`, { cause: e });
      }
      if (chunk.done) return;
      buf += decoder.decode(chunk.value, { stream: true });
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (!line) continue;
        let ev: unknown;
        try {
          ev = JSON.parse(line);
        } catch (e) {
          throw new SandboxConnectionError(`${what}: not a JSON line: ${line.slice(0, 200)}`, {
            cause: e,
          });
        }
        yield ev;
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

async function readText(res: Response, method: string, path: string): Promise<string> {
  try {
    return await res.text();
  } catch (e) {
    throw new SandboxConnectionError(`${method} ${path}: reading the answer: ${e}`, { cause: e });
  }
}

async function apiError(res: Response): Promise<SandboxAPIError> {
  let text = "";
  try {
    text = await res.text();
  } catch {
    // The body is lost; the status is enough.
  }
  let code = `http_${res.status}`;
  let message = text.trim() || res.statusText;
  try {
    const err = JSON.parse(text).error;
    if (typeof err?.code === "string") {
      code = err.code;
      message = String(err.message ?? "");
    }
  } catch {
    // Not the error shape: keep the raw text.
  }
  const Cls = res.status === 404 ? NotFoundError : SandboxAPIError;
  return new Cls(res.status, code, message, res.headers.get("x-request-id"));
}
