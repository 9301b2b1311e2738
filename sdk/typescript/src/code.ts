// The code interpreter's types (ADR 0019; POST /v1/sandboxes/{id}/contexts, /code, /code/stream).
import { StreamError, SandboxConnectionError } from "./errors.js";

/** A code context: a long-lived kernel whose state (variables, imports, cwd) persists between
 * runCode(code, undefined, { context }) calls. */
export interface Context {
  /** "ctx_" + 16 hex digits. */
  id: string;
  /** "python", "javascript" or "bash". */
  language: string;
  /** The directory it started in. */
  cwd: string;
  /** The kernel's pid in the sandbox. */
  pid: number;
  /** "running", or "dead" once the kernel exited (restartCodeContext revives it). */
  state: string;
  /** True for the per-language context used when runCode names no context. */
  default: boolean;
  /** RFC 3339 UTC. */
  createdAt: string;
}

/** Options of the code-interpreter form of runCode (Session.runCode with options.context, or
 * Session.executeCode). */
export interface RunCodeOptions {
  /** The context to run in (a Context or its id); without it runCode is one-shot. */
  context?: Context | string;
  /** Seconds; on expiry the code is interrupted (status "timeout") and the context survives. */
  timeout?: number;
  /** Cap on stdout+stderr kept (default and maximum 1 MiB). */
  maxOutputBytes?: number;
  /** Environment variables for this run only, put back as they were after it (os.environ in
   * Python, process.env in JavaScript, exported variables in bash, which takes shell names
   * only); at most 64 KiB of keys and values (a 400 past it). */
  env?: Record<string, string>;
  /** Called with each piece of stdout as it arrives (uses the NDJSON stream). */
  onStdout?: (data: string) => void;
  /** Called with each piece of stderr as it arrives (uses the NDJSON stream). */
  onStderr?: (data: string) => void;
  /** Called with each rich result as it arrives (uses the NDJSON stream). */
  onResult?: (result: Result) => void;
  /** Called with the code's exception when it comes (uses the NDJSON stream). */
  onError?: (error: ExecutionError) => void;
}

/** An exception the code raised (or the kernel's own: "KernelDied", "KeyboardInterrupt" on a
 * timeout or interrupt). */
export interface ExecutionError {
  name: string;
  value: string;
  /** Lines, without terminal colour codes. */
  traceback: string[];
}

/** Chart data extracted from a matplotlib figure: type ("line", "bar", "scatter", "pie", ...),
 * title, x_label, y_label, elements, ... as the server sent it. */
export type Chart = { type: string; [key: string]: unknown };

const NAMES: [string, string][] = [
  ["text", "text/plain"],
  ["html", "text/html"],
  ["markdown", "text/markdown"],
  ["svg", "image/svg+xml"],
  ["png", "image/png"],
  ["jpeg", "image/jpeg"],
  ["pdf", "application/pdf"],
  ["latex", "text/latex"],
  ["json", "application/json"],
  ["javascript", "application/javascript"],
];

function b64(s: string): Uint8Array {
  const g = globalThis as { Buffer?: { from(s: string, e: string): Uint8Array } };
  if (g.Buffer) return new Uint8Array(g.Buffer.from(s, "base64"));
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** One rich result: the value of the last expression (isMainResult) or something displayed or
 * plotted. `data` holds every MIME type as the server sent it ({mime: value}); the getters
 * read them decoded (png, jpeg, pdf as bytes from base64), undefined when absent. */
export class Result {
  readonly data: Record<string, unknown>;
  readonly isMainResult: boolean;
  /** Chart data of a matplotlib figure, or undefined. */
  readonly chart: Chart | undefined;

  constructor(data: Record<string, unknown> = {}, isMainResult = false, chart?: Chart) {
    this.data = data;
    this.isMainResult = isMainResult;
    this.chart = chart;
  }

  #str(mime: string): string | undefined {
    const v = this.data[mime];
    return typeof v === "string" ? v : undefined;
  }
  #bytes(mime: string): Uint8Array | undefined {
    const v = this.data[mime];
    return typeof v === "string" ? b64(v) : undefined;
  }

  /** text/plain. */
  get text(): string | undefined { return this.#str("text/plain"); }
  /** text/html. */
  get html(): string | undefined { return this.#str("text/html"); }
  /** text/markdown. */
  get markdown(): string | undefined { return this.#str("text/markdown"); }
  /** image/svg+xml. */
  get svg(): string | undefined { return this.#str("image/svg+xml"); }
  /** image/png, decoded from base64. */
  get png(): Uint8Array | undefined { return this.#bytes("image/png"); }
  /** image/jpeg, decoded from base64. */
  get jpeg(): Uint8Array | undefined { return this.#bytes("image/jpeg"); }
  /** application/pdf, decoded from base64. */
  get pdf(): Uint8Array | undefined { return this.#bytes("application/pdf"); }
  /** text/latex. */
  get latex(): string | undefined { return this.#str("text/latex"); }
  /** application/json, the decoded value. */
  get json(): unknown { return this.data["application/json"]; }
  /** application/javascript. */
  get javascript(): string | undefined { return this.#str("application/javascript"); }

  /** The getter names of the MIME types present, plus "chart" (e.g. ["text", "png", "chart"]). */
  formats(): string[] {
    const f = NAMES.filter(([, m]) => m in this.data).map(([n]) => n);
    if (this.chart !== undefined) f.push("chart");
    return f;
  }
}

/** The outcome of runCode in a code context. */
export interface Execution {
  /** Displayed values, figures, and the main result. */
  results: Result[];
  stdout: string;
  stderr: string;
  /** The code's exception, or null (an error in the code does not reject). */
  error: ExecutionError | null;
  /** "ok", "error", "timeout" or "dead" (the kernel exited; restart the context). */
  status: string;
  ok: boolean;
  /** The kernel's counter (null for bash). */
  executionCount: number | null;
  durationMs: number;
  timedOut: boolean;
  /** Output went past maxOutputBytes (stdout, stderr and results share it). */
  truncated: boolean;
  /** Which outputs lost something to the cut: a sorted subset of "results", "stderr", "stdout". */
  truncatedOutputs: string[];
  /** Results left out whole (they did not fit in the output budget). */
  droppedResults: number;
  /** bash only. */
  exitCode?: number;
  contextId: string;
  language: string;
  /** The main result's text/plain, or undefined. */
  text: string | undefined;
  /** The pieces of output as they came. */
  logs: { stdout: string[]; stderr: string[] };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function contextInfo(o: any): Context {
  return {
    id: o.id,
    language: o.language,
    cwd: o.cwd,
    pid: o.pid ?? 0,
    state: o.state,
    default: !!o.default,
    createdAt: o.created_at ?? "",
  };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function resultOf(o: any): Result {
  return new Result(o.data ?? {}, !!o.is_main_result, o.chart ?? undefined);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function errorOf(o: any): ExecutionError {
  return { name: o.name ?? "", value: o.value ?? "", traceback: [...(o.traceback ?? [])] };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function finish(ex: Omit<Execution, "ok" | "text">, end: any): Execution {
  const e = ex as Execution;
  e.status = end.status ?? "ok";
  e.ok = e.status === "ok";
  e.executionCount = end.execution_count ?? null;
  e.durationMs = end.duration_ms ?? 0;
  e.timedOut = !!end.timed_out;
  e.truncated = !!end.truncated;
  e.truncatedOutputs = Array.isArray(end.truncated_outputs) ? [...end.truncated_outputs] : [];
  e.droppedResults = end.dropped_results ?? 0;
  if (typeof end.exit_code === "number") e.exitCode = end.exit_code;
  e.text = e.results.find((r) => r.isMainResult)?.text;
  return e;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function executionOf(o: any): Execution {
  const stdout = o.stdout ?? "";
  const stderr = o.stderr ?? "";
  return finish(
    {
      results: (o.results ?? []).map(resultOf),
      stdout,
      stderr,
      error: o.error ? errorOf(o.error) : null,
      status: "ok",
      executionCount: null,
      durationMs: 0,
      timedOut: false,
      truncated: false,
      truncatedOutputs: [],
      droppedResults: 0,
      contextId: o.context_id ?? "",
      language: o.language ?? "",
      logs: { stdout: stdout ? [stdout] : [], stderr: stderr ? [stderr] : [] },
    },
    o,
  );
}

/** Folds the /code/stream events into an Execution, calling the callbacks as they come. */
export async function executionOfStream(
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  events: AsyncIterable<any>,
  options: RunCodeOptions,
): Promise<Execution> {
  const ex: Omit<Execution, "ok" | "text"> = {
    results: [],
    stdout: "",
    stderr: "",
    error: null,
    status: "ok",
    executionCount: null,
    durationMs: 0,
    timedOut: false,
    truncated: false,
    truncatedOutputs: [],
    droppedResults: 0,
    contextId: "",
    language: "",
    logs: { stdout: [], stderr: [] },
  };
  for await (const ev of events) {
    if (ev.type === "context") {
      ex.contextId = ev.context_id ?? "";
      ex.language = ev.language ?? "";
    } else if (ev.type === "stdout" || ev.type === "stderr") {
      const data: string = ev.data ?? "";
      ex.logs[ev.type as "stdout" | "stderr"].push(data);
      (ev.type === "stdout" ? options.onStdout : options.onStderr)?.(data);
    } else if (ev.type === "result") {
      const r = resultOf(ev);
      ex.results.push(r);
      options.onResult?.(r);
    } else if (ev.type === "error" && "code" in ev) {
      throw new StreamError(ev.code ?? "internal", ev.message ?? "");
    } else if (ev.type === "error") {
      ex.error = errorOf(ev);
      options.onError?.(ex.error);
    } else if (ev.type === "end") {
      ex.stdout = ex.logs.stdout.join("");
      ex.stderr = ex.logs.stderr.join("");
      return finish(ex, ev);
    }
  }
  throw new SandboxConnectionError("code stream ended without an end event");
}

/** A Context or its id -> the id. */
export function contextId(c: Context | string): string {
  return typeof c === "string" ? c : c.id;
}
