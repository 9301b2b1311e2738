// Background processes (ADR 0011): the request bodies, the event stream and ProcessHandle.
// The REST routes are /v1/sandboxes/{id}/processes[/{pid}[/stream|stdin|close-stdin|signal|
// resize]] (api/openapi.json, src/api/handlers_procs.cc, docs/adr/0011-background-processes.md).
import { ndjsonObjects } from "./http.js";
import { SandboxConnectionError, StreamError } from "./errors.js";
import type { Session } from "./session.js";
import type {
  ProcessEvent,
  ProcessExit,
  ProcessInfo,
  StartProcessOptions,
} from "./types.js";

/** Options of streamProcess() / ProcessHandle.stream(). */
export interface StreamProcessOptions {
  /** First replay up to this many bytes of the output already written (0..4194304, the
   * ring's size at most; default 0: only output from now on). */
  replayBytes?: number;
  /** Detaches when aborted (e.g. AbortSignal.timeout(ms)): the call rejects with
   * signal.reason (an AbortError or TimeoutError DOMException); the process keeps running. */
  signal?: AbortSignal;
}

/** Options of waitProcess() / ProcessHandle.wait(). */
export interface WaitProcessOptions extends StreamProcessOptions {
  /** Called with each piece of stdout (all output of a PTY) while waiting. */
  onStdout?: (data: string) => void;
  /** Called with each piece of stderr while waiting. */
  onStderr?: (data: string) => void;
}

/** The JSON body of POST .../processes (internal). */
export function startBody(
  command: string | string[],
  o: StartProcessOptions,
): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (Array.isArray(command)) body.argv = [...command, ...(o.args ?? [])];
  else if (o.args) body.argv = [command, ...o.args];
  else body.command = command;
  if (o.env) body.env = o.env;
  if (o.cwd !== undefined) body.workdir = o.cwd;
  if (o.user !== undefined) body.user = o.user;
  if (o.tag !== undefined) body.tag = o.tag;
  if (o.stdin) body.stdin = true;
  if (o.pty) body.pty = true;
  if (o.cols !== undefined) body.cols = o.cols;
  if (o.rows !== undefined) body.rows = o.rows;
  if (o.ringBytes !== undefined) body.ring_bytes = o.ringBytes;
  return body;
}

/** The JSON body of POST .../stdin (internal): text as is, bytes as base64. */
export function stdinBody(data: string | Uint8Array): Record<string, string> {
  if (typeof data === "string") return { data };
  let bin = "";
  for (let i = 0; i < data.length; i += 0x8000) {
    bin += String.fromCharCode(...data.subarray(i, i + 0x8000));
  }
  return { data: btoa(bin), encoding: "base64" };
}

/** The typed events of a process's NDJSON stream (internal); ends after "exit" or "error".
 * Throws SandboxConnectionError when the stream ends without either. */
export async function* processEvents(
  res: Response,
  signal?: AbortSignal,
): AsyncGenerator<ProcessEvent, void, undefined> {
  for await (const ev of ndjsonObjects(res, "process stream", signal)) {
    if (ev.type === "stdout" || ev.type === "stderr") {
      yield { type: ev.type, data: ev.data ?? "" };
    } else if (ev.type === "skipped") {
      yield { type: "skipped", bytes: ev.bytes ?? 0 };
    } else if (ev.type === "exit") {
      const exitCode: number = ev.exit_code ?? -1;
      const bySignal: number = ev.signal ?? 0;
      yield { type: "exit", exitCode, signal: bySignal, ok: exitCode === 0 && bySignal === 0 };
      return;
    } else if (ev.type === "error") {
      yield { type: "error", code: ev.code ?? "internal", message: ev.message ?? "" };
      return;
    }
    // "keepalive" and unknown types are skipped.
  }
  throw new SandboxConnectionError("process stream ended without an exit event");
}

/** Follows events until the exit (internal; waitProcess). */
export async function waitForExit(
  events: AsyncIterable<ProcessEvent>,
  o: WaitProcessOptions,
): Promise<ProcessExit> {
  for await (const ev of events) {
    if (ev.type === "stdout") o.onStdout?.(ev.data);
    else if (ev.type === "stderr") o.onStderr?.(ev.data);
    else if (ev.type === "exit") return { exitCode: ev.exitCode, signal: ev.signal, ok: ev.ok };
    else if (ev.type === "error") throw new StreamError(ev.code, ev.message);
  }
  throw new SandboxConnectionError("process stream ended without an exit event");
}

/**
 * A handle on one background process of a session (Session.startProcess() and
 * Session.process() return it). Every method is the Session method of the same name with
 * this pid; the process lives on in the sandbox whatever happens to the handle.
 */
export class ProcessHandle {
  /** The process id inside the sandbox. */
  readonly pid: number;
  /** The session (sandbox) the process runs in. */
  readonly session: Session;
  /** The ProcessInfo last seen (at start, refresh() or kill()); undefined for a handle made
   * by Session.process(pid) until refresh(). */
  info: ProcessInfo | undefined;

  /** @internal */
  constructor(session: Session, pid: number, info?: ProcessInfo) {
    this.session = session;
    this.pid = pid;
    this.info = info;
  }

  /** Re-reads the process (GET .../processes/{pid}) and stores it in `info`.
   * Rejects with NotFoundError when the pid is unknown (or long gone). */
  async refresh(): Promise<ProcessInfo> {
    this.info = await this.session.getProcess(this.pid);
    return this.info;
  }

  /** Follows the output: see Session.streamProcess(). */
  stream(options: StreamProcessOptions = {}): AsyncGenerator<ProcessEvent, void, undefined> {
    return this.session.streamProcess(this.pid, options);
  }

  /** Waits for the exit, passing output to callbacks: see Session.waitProcess(). */
  wait(options: WaitProcessOptions = {}): Promise<ProcessExit> {
    return this.session.waitProcess(this.pid, options);
  }

  /** Writes to stdin; resolves with the bytes accepted: see Session.writeStdin(). */
  writeStdin(data: string | Uint8Array): Promise<number> {
    return this.session.writeStdin(this.pid, data);
  }

  /** Sends EOF to stdin: see Session.closeStdin(). */
  closeStdin(): Promise<void> {
    return this.session.closeStdin(this.pid);
  }

  /** Sends a signal to the process group: see Session.signalProcess(). */
  signal(signal: string | number = "SIGTERM"): Promise<void> {
    return this.session.signalProcess(this.pid, signal);
  }

  /** Resizes the PTY: see Session.resizeProcess(). */
  resize(cols: number, rows: number): Promise<void> {
    return this.session.resizeProcess(this.pid, cols, rows);
  }

  /** Kills the process and its whole tree; resolves with (and stores) the final
   * ProcessInfo: see Session.killProcess(). */
  async kill(): Promise<ProcessInfo> {
    this.info = await this.session.killProcess(this.pid);
    return this.info;
  }
}
