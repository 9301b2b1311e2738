// Session: the handle on one sandbox (commands, files, snapshots, lifetime).
import { ndjsonObjects, type Transport } from "./http.js";
import { readTar, writeTar, type TarEntry } from "./tar.js";
import {
  exitInfo,
  fileInfo,
  isOk,
  previewInfo,
  processInfo,
  sandboxInfo,
  snapshotInfo,
  type ExecEvent,
  type ExecOptions,
  type ExecResult,
  type FileInfo,
  type OutputChunk,
  type PreviewInfo,
  type ProcessEvent,
  type ProcessExit,
  type ProcessInfo,
  type PauseOptions,
  type ResumeOptions,
  type StartProcessOptions,
  type SandboxInfo,
  type SnapshotInfo,
  type WriteResult,
} from "./types.js";
import { NotFoundError, SandboxAPIError, SandboxConnectionError, StreamError } from "./errors.js";
import { FileWatch, type WatchFilesOptions } from "./watch.js";
import {
  contextId,
  contextInfo,
  executionOf,
  executionOfStream,
  type Context,
  type Execution,
  type ExecutionError,
  type Result,
  type RunCodeOptions,
} from "./code.js";
import {
  ProcessHandle,
  processEvents,
  startBody,
  stdinBody,
  waitForExit,
  type StreamProcessOptions,
  type WaitProcessOptions,
} from "./process.js";

/** runCode languages -> the interpreter that reads the program from stdin. */
const LANGUAGES: Record<string, string[]> = {
  python: ["python3", "-"],
  python3: ["python3", "-"],
  py: ["python3", "-"],
  javascript: ["node", "-"],
  js: ["node", "-"],
  node: ["node", "-"],
  go: ["sh", "-c", 'd=$(mktemp -d) && cat > "$d/main.go" && cd "$d" && go run main.go'],
  golang: ["sh", "-c", 'd=$(mktemp -d) && cat > "$d/main.go" && cd "$d" && go run main.go'],
  sh: ["sh", "-s"],
  shell: ["sh", "-s"],
  bash: ["bash", "-s"],
};

/** The language runCode uses when none is given, as seed A's runCode does: by the template's
 * name (python, node, go), else by the first of python3, node, go among its tools, else
 * python. */
export function defaultLanguage(templateName: string, tools: string[] = []): string {
  const byName: Record<string, string> = { python: "python", node: "javascript", go: "go" };
  if (byName[templateName]) return byName[templateName];
  for (const [tool, language] of [
    ["python3", "python"],
    ["node", "javascript"],
    ["go", "go"],
  ]) {
    if (tools.includes(tool)) return language;
  }
  return "python";
}

function execBody(command: string | string[], o: ExecOptions): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (Array.isArray(command)) body.argv = [...command, ...(o.args ?? [])];
  else if (o.args) body.argv = [command, ...o.args];
  else body.command = command;
  if (o.env) body.env = o.env;
  if (o.cwd !== undefined) body.workdir = o.cwd;
  if (o.timeoutSeconds !== undefined) body.timeout = o.timeoutSeconds;
  if (o.stdin !== undefined) body.stdin = o.stdin;
  if (o.maxOutputBytes !== undefined) body.max_output_bytes = o.maxOutputBytes;
  if (o.user !== undefined) body.user = o.user;
  return body;
}

/** pid as it goes into a path: a positive integer, else TypeError. */
function checkPid(pid: number): number {
  if (!Number.isSafeInteger(pid) || pid < 1) {
    throw new TypeError(`pid must be a positive integer, got ${JSON.stringify(pid)}`);
  }
  return pid;
}

function modeText(mode: number | string | undefined): string | undefined {
  if (mode === undefined) return undefined;
  return typeof mode === "number" ? mode.toString(8) : mode;
}

/** A handle on one sandbox. Sandbox.create() returns it at once and creates the sandbox in
 * the background (seed A's shape); every method waits for the creation and rejects with its
 * error if it failed. `await session.ready()` waits explicitly. */
/** One child of Session.forkRunning(): its Session, or why it was not made (the others are
 * unaffected). `memory`: whether it started with the parent's memory (false on every backend
 * so far). */
export interface ForkedChild {
  sandbox?: Session;
  error?: SandboxAPIError;
  memory: boolean;
}

export class Session {
  #t: Transport;
  #ready: Promise<SandboxInfo>;
  #info: SandboxInfo | undefined;
  #language: string | undefined;

  /** @internal */
  constructor(t: Transport, info: Promise<SandboxInfo> | SandboxInfo) {
    this.#t = t;
    if (info instanceof Promise) {
      this.#ready = info.then((i) => (this.#info = i));
      this.#ready.catch(() => {}); // reported by the first call that needs it
    } else {
      this.#info = info;
      this.#ready = Promise.resolve(info);
    }
  }

  /** The sandbox id ("sb_" + 16 hex), or undefined while it is being created. */
  get id(): string | undefined {
    return this.#info?.id;
  }

  /** The last SandboxInfo seen (undefined while it is being created). */
  get info(): SandboxInfo | undefined {
    return this.#info;
  }

  /** The status last seen ("running", "paused", ...; seed B's Sandbox.status), undefined
   * while the sandbox is being created. refresh() re-reads it. */
  get status(): string | undefined {
    return this.#info?.status;
  }

  /** The template the sandbox runs (seed B's Sandbox.image), undefined while it is being
   * created. */
  get image(): string | undefined {
    return this.#info?.image;
  }

  /** When the TTL ends, RFC 3339 UTC text, as last seen (seed B's Sandbox.expires_at);
   * while paused, when the paused sandbox is destroyed. */
  get expiresAt(): string | undefined {
    return this.#info?.expiresAt;
  }

  /** The server's JSON of the sandbox as last seen, snake_case (seed B's Sandbox.data). */
  get data(): Record<string, unknown> | undefined {
    return this.#info?.raw;
  }

  /** Waits until the sandbox exists; resolves with this session. Rejects with the create
   * error (SandboxAPIError 400 invalid_request, 429 limit_exceeded, ...). */
  async ready(): Promise<this> {
    await this.#ready;
    return this;
  }

  async #path(tail = ""): Promise<string> {
    const info = await this.#ready;
    return `/v1/sandboxes/${info.id}${tail}`;
  }

  /** The language runCode(code) uses for this session's template (see runCode). */
  async defaultLanguage(): Promise<string> {
    if (this.#language === undefined) {
      const name = (await this.#ready).template;
      let tools: string[] = [];
      if (!["python", "node", "go"].includes(name)) {
        try {
          // eslint-disable-next-line @typescript-eslint/no-explicit-any
          const t: any = await this.#t.json("GET", `/v1/templates/${encodeURIComponent(name)}`);
          tools = Array.isArray(t.tools) ? t.tools : [];
        } catch {
          tools = []; // an older server without /v1/templates: by name only
        }
      }
      this.#language = defaultLanguage(name, tools);
    }
    return this.#language;
  }

  /** Re-reads the sandbox (GET /v1/sandboxes/{id}); NotFoundError when it is gone. */
  async refresh(): Promise<SandboxInfo> {
    this.#info = sandboxInfo(await this.#t.json("GET", await this.#path()));
    return this.#info;
  }

  /**
   * Runs a command to completion (POST /v1/sandboxes/{id}/exec).
   * command: a string run by /bin/sh -c, or an argv array (never shell-expanded); with
   * options.args, command is the program and args its arguments.
   * Resolves with ExecResult (check `ok`); a non-zero exit does not reject.
   * Rejects with SandboxAPIError (400 bad request), NotFoundError, SandboxConnectionError.
   */
  async exec(command: string | string[], options: ExecOptions = {}): Promise<ExecResult> {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const o: any = await this.#t.json("POST", await this.#path("/exec"), {
      json: execBody(command, options),
    });
    const exit = exitInfo(o);
    const output: OutputChunk[] = [];
    if (o.stdout) output.push({ type: "stdout", data: o.stdout });
    if (o.stderr) output.push({ type: "stderr", data: o.stderr });
    return { ...exit, stdout: o.stdout, stderr: o.stderr, ok: isOk(exit), output };
  }

  /** Seed A's name for exec(): same arguments and result. */
  run(command: string | string[], options: ExecOptions = {}): Promise<ExecResult> {
    return this.exec(command, options);
  }

  /**
   * Runs a command and yields its events as they come (POST .../exec/stream, NDJSON):
   * {type:"stdout"|"stderr", data} in write order (characters never split), then exactly one
   * {type:"exit", exitCode, ok, ...} or {type:"error", code, message} (e.g. the sandbox was
   * destroyed mid-run). Keepalives are skipped. Breaking out of the loop closes the
   * connection, which cancels the command.
   * Rejects with SandboxAPIError for errors found before the stream starts (404, 400) and
   * SandboxConnectionError if the stream ends without a final event.
   */
  async *execStream(
    command: string | string[],
    options: ExecOptions = {},
  ): AsyncGenerator<ExecEvent, void, undefined> {
    const res = await this.#t.send("POST", await this.#path("/exec/stream"), {
      json: execBody(command, options),
      accept: "application/x-ndjson",
    });
    for await (const ev of ndjsonObjects(res, "exec stream")) {
      if (ev.type === "stdout" || ev.type === "stderr") {
        yield { type: ev.type, data: ev.data ?? "" };
      } else if (ev.type === "exit") {
        const exit = exitInfo(ev);
        yield { type: "exit", ok: isOk(exit), ...exit };
        return;
      } else if (ev.type === "error") {
        yield { type: "error", code: ev.code ?? "internal", message: ev.message ?? "" };
        return;
      }
      // "keepalive" and unknown types are skipped.
    }
    throw new SandboxConnectionError("exec stream ended without an exit event");
  }

  // ---- background processes (ADR 0011) ------------------------------------------------------

  /**
   * Starts a background process (POST /v1/sandboxes/{id}/processes) and resolves with its
   * handle as soon as it runs. It outlives this call and this client; destroying the sandbox
   * ends it. command: a string run by /bin/sh -c, or an argv array (never shell-expanded);
   * with options.args, command is the program. options: env, cwd, user as for exec(); tag (a
   * label, at most 256 bytes); stdin (give it a stdin pipe for writeStdin); pty with cols x
   * rows (default 80 x 24, each 1..10000); ringBytes (output kept for replay, default 256 KiB,
   * at most 4 MiB). Output is not lost while nobody follows: it waits in the ring.
   * Rejects with SandboxAPIError 400 (bad options), 429 (over 256 running), NotFoundError (no
   * such sandbox, or a missing cwd), SandboxConnectionError.
   */
  async startProcess(
    command: string | string[],
    options: StartProcessOptions = {},
  ): Promise<ProcessHandle> {
    const info = processInfo(
      await this.#t.json("POST", await this.#path("/processes"), {
        json: startBody(command, options),
      }),
    );
    return new ProcessHandle(this, info.pid, info);
  }

  /** A handle on a process of this sandbox by pid, e.g. one from listProcesses(); sends
   * nothing (a later call rejects with NotFoundError if the pid is unknown). */
  process(pid: number): ProcessHandle {
    return new ProcessHandle(this, checkPid(pid));
  }

  /** Running and recently exited (the 64 most recent) background processes, in start order
   * (GET .../processes). Rejects with NotFoundError when the sandbox is gone. */
  async listProcesses(): Promise<ProcessInfo[]> {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const o: any = await this.#t.json("GET", await this.#path("/processes"));
    return (o.processes ?? []).map(processInfo);
  }

  /** One background process (GET .../processes/{pid}). Rejects with NotFoundError for an
   * unknown pid; TypeError for a pid that is not a positive integer. */
  async getProcess(pid: number): Promise<ProcessInfo> {
    return processInfo(await this.#t.json("GET", await this.#procPath(pid)));
  }

  /**
   * Follows a background process's output (GET .../processes/{pid}/stream, NDJSON). Yields
   * {type:"stdout"|"stderr", data} as the process writes (text; invalid UTF-8 becomes U+FFFD,
   * characters are never split), {type:"skipped", bytes} when this reader fell behind the
   * replay ring and lost that much output, then exactly one {type:"exit", exitCode, signal,
   * ok} when the process ends (at once for one that has already exited) or {type:"error",
   * code, message}. options.replayBytes first replays up to that many bytes of past output
   * (default 0, at most 4 MiB). The stream attaches when iteration starts (the first
   * next()), so output written before that arrives only through replayBytes. Keepalives are
   * skipped; there is no idle limit. Breaking out of the loop, or options.signal aborting
   * (the loop then rejects with signal.reason), detaches; the process keeps running.
   * Rejects with NotFoundError (unknown pid or sandbox), SandboxAPIError 400 (replayBytes out
   * of range), SandboxConnectionError if the stream breaks or ends without a final event.
   */
  async *streamProcess(
    pid: number,
    options: StreamProcessOptions = {},
  ): AsyncGenerator<ProcessEvent, void, undefined> {
    const res = await this.#t.send("GET", await this.#procPath(pid, "/stream"), {
      query: { replay_bytes: options.replayBytes },
      accept: "application/x-ndjson",
      signal: options.signal,
    });
    yield* processEvents(res, options.signal);
  }

  /**
   * Waits until a background process exits and resolves with {exitCode, signal, ok}
   * (exitCode is the status or 128+signal; ok: exit 0 and no signal). It follows the
   * process's stream, passing output to options.onStdout / options.onStderr; output written
   * before the call reaches them only with options.replayBytes. Resolves at once for a
   * process that has already exited (still listed: the 64 most recent are). It waits as
   * long as the process runs; options.signal (e.g. AbortSignal.timeout(ms)) stops waiting.
   * Rejects with NotFoundError (unknown pid or sandbox), StreamError (the stream ended with an
   * error event, e.g. the sandbox was destroyed), SandboxConnectionError, or options.signal's
   * reason when it aborted (the process keeps running).
   */
  async waitProcess(pid: number, options: WaitProcessOptions = {}): Promise<ProcessExit> {
    return waitForExit(this.streamProcess(pid, options), options);
  }

  /**
   * Writes to a background process's stdin (POST .../processes/{pid}/stdin): a string as
   * UTF-8, bytes as they are. Resolves with the number of bytes accepted. Rejects with
   * SandboxAPIError 409 (no open stdin: started without stdin, or closed), 429 (more than
   * 1 MiB waiting unread), NotFoundError (unknown pid).
   */
  async writeStdin(pid: number, data: string | Uint8Array): Promise<number> {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const o: any = await this.#t.json("POST", await this.#procPath(pid, "/stdin"), {
      json: stdinBody(data),
    });
    return o.bytes;
  }

  /** Sends EOF to a background process's stdin, ^D on a PTY (POST .../close-stdin).
   * Rejects with SandboxAPIError 409 (no open stdin), NotFoundError (unknown pid). */
  async closeStdin(pid: number): Promise<void> {
    await this.#t.bytes("POST", await this.#procPath(pid, "/close-stdin"));
  }

  /** Sends a signal to a background process's process group (POST .../signal): a name such
   * as "SIGINT" or "term" (SIG optional, any case; see signal(7)) or a number 1..64; default
   * "SIGTERM". Rejects with SandboxAPIError 400 (unknown signal), 409 (already exited),
   * NotFoundError (unknown pid). */
  async signalProcess(pid: number, signal: string | number = "SIGTERM"): Promise<void> {
    await this.#t.bytes("POST", await this.#procPath(pid, "/signal"), {
      json: { signal: String(signal) },
    });
  }

  /** Resizes a background process's PTY to cols x rows character cells, each 1..10000
   * (POST .../resize). Rejects with SandboxAPIError 400 (out of range), 409 (no PTY),
   * NotFoundError (unknown pid). */
  async resizeProcess(pid: number, cols: number, rows: number): Promise<void> {
    await this.#t.bytes("POST", await this.#procPath(pid, "/resize"), { json: { cols, rows } });
  }

  /** Kills a background process and its whole tree (SIGKILL, repeated until none is left;
   * DELETE .../processes/{pid}); resolves with its final ProcessInfo (state "exited", signal
   * 9 unless it had already ended). Rejects with NotFoundError (unknown pid). */
  async killProcess(pid: number): Promise<ProcessInfo> {
    return processInfo(await this.#t.json("DELETE", await this.#procPath(pid)));
  }

  async #procPath(pid: number, tail = ""): Promise<string> {
    return this.#path(`/processes/${checkPid(pid)}${tail}`);
  }

  /**
   * Runs code, in one of two ways.
   *
   * One-shot (seed A's runCode; options.context absent): the interpreter reads the program
   * from stdin and exits. language: "python" (python3), "javascript"/"node", "go" (go run),
   * "sh", "bash". Omitted, it is picked from the session's template as seed A's runCode does
   * (defaultLanguage(): python -> python, node -> javascript, go -> go, else by the template's
   * tools from GET /v1/templates/{name}, else python). The interpreter must exist in the
   * template. Resolves with ExecResult; throws TypeError for an unknown language.
   *
   * Code interpreter (options.context given, a Context or its id, or any on* callback): the
   * code runs in a stateful kernel and resolves with an Execution; see executeCode() for the
   * options
   * (timeout, maxOutputBytes, env, onStdout/onStderr/onResult/onError).
   */
  runCode(
    code: string,
    language: string | undefined,
    options: RunCodeOptions & { context: Context | string },
  ): Promise<Execution>;
  runCode(
    code: string,
    language: string | undefined,
    options: RunCodeOptions & ({ onStdout: (d: string) => void } | { onStderr: (d: string) => void }
      | { onResult: (r: Result) => void } | { onError: (e: ExecutionError) => void }),
  ): Promise<Execution>;
  runCode(
    code: string,
    language?: string,
    options?: Omit<ExecOptions, "stdin" | "args">,
  ): Promise<ExecResult>;
  async runCode(
    code: string,
    language?: string,
    options: Omit<ExecOptions, "stdin" | "args"> | RunCodeOptions = {},
  ): Promise<ExecResult | Execution> {
    const o = options as RunCodeOptions;
    if (o.context !== undefined || o.onStdout || o.onStderr || o.onResult || o.onError) {
      return this.executeCode(code, language, o);
    }
    language ??= await this.defaultLanguage();
    const argv = LANGUAGES[language.toLowerCase()];
    if (!argv) {
      throw new TypeError(
        `runCode: unsupported language ${JSON.stringify(language)} ` +
          `(use one of ${Object.keys(LANGUAGES).join(", ")})`,
      );
    }
    return this.exec(argv, { ...(options as ExecOptions), stdin: code });
  }

  // ---- code interpreter (ADR 0019) ----------------------------------------------------------

  /**
   * Runs code in a stateful code context (POST .../code); always the interpreter: without
   * options.context, the sandbox's default context of `language` (created on first use).
   * language: "python", "javascript" or "bash" (Python needs the `python` template,
   * JavaScript the `node` one); omitted: the context's, or python. With any of onStdout,
   * onStderr, onResult, onError the NDJSON route .../code/stream is used and they are called
   * as the events arrive. Resolves with Execution (an error in the code is its `error`, not
   * a rejection). Rejects with NotFoundError (sandbox or context), SandboxAPIError 400 (bad
   * language, code over 512 KiB), 409 (context busy or dead, interpreter missing),
   * StreamError (the stream failed after it began), SandboxConnectionError.
   */
  async executeCode(
    code: string,
    language?: string,
    options: RunCodeOptions = {},
  ): Promise<Execution> {
    const body: Record<string, unknown> = { code };
    if (options.context !== undefined) body.context_id = contextId(options.context);
    if (language !== undefined) body.language = language;
    if (options.timeout !== undefined) body.timeout = options.timeout;
    if (options.maxOutputBytes !== undefined) body.max_output_bytes = options.maxOutputBytes;
    if (options.env !== undefined) body.env = options.env;
    if (!(options.onStdout || options.onStderr || options.onResult || options.onError)) {
      return executionOf(await this.#t.json("POST", await this.#path("/code"), { json: body }));
    }
    const res = await this.#t.send("POST", await this.#path("/code/stream"), {
      json: body,
      accept: "application/x-ndjson",
    });
    return executionOfStream(ndjsonObjects(res, "code stream"), options);
  }

  /** Starts a new code context, a kernel of its own (POST .../contexts). language: "python"
   * (default), "javascript" or "bash"; options.cwd: its starting directory (default
   * /workspace). Rejects with SandboxAPIError 400 (unknown language, missing cwd), 409
   * (interpreter missing, not running), NotFoundError. */
  async createCodeContext(language = "python", options: { cwd?: string } = {}): Promise<Context> {
    const body: Record<string, unknown> = { language };
    if (options.cwd !== undefined) body.cwd = options.cwd;
    return contextInfo(await this.#t.json("POST", await this.#path("/contexts"), { json: body }));
  }

  /** The sandbox's code contexts, default ones included (GET .../contexts). */
  async listCodeContexts(): Promise<Context[]> {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const o: any = await this.#t.json("GET", await this.#path("/contexts"));
    return (o.contexts ?? []).map(contextInfo);
  }

  /** One code context (GET .../contexts/{cid}); state "dead" once its kernel exited.
   * Rejects with NotFoundError. */
  async getCodeContext(context: Context | string): Promise<Context> {
    return contextInfo(
      await this.#t.json("GET", await this.#path(`/contexts/${contextId(context)}`)),
    );
  }

  /** Stops a context's kernel and forgets it (DELETE .../contexts/{cid}). Rejects with
   * NotFoundError. */
  async deleteCodeContext(context: Context | string): Promise<void> {
    await this.#t.bytes("DELETE", await this.#path(`/contexts/${contextId(context)}`));
  }

  /** Replaces a context's kernel with a fresh one: same id, state lost, a dead one revived
   * (POST .../contexts/{cid}/restart). Resolves with the new Context. Rejects with
   * NotFoundError, SandboxAPIError 409. */
  async restartCodeContext(context: Context | string): Promise<Context> {
    return contextInfo(
      await this.#t.json("POST", await this.#path(`/contexts/${contextId(context)}/restart`)),
    );
  }

  /** Interrupts the code running in a context (KeyboardInterrupt in Python); the context and
   * its state survive (POST .../contexts/{cid}/interrupt). Rejects with NotFoundError. */
  async interruptCodeContext(context: Context | string): Promise<void> {
    await this.#t.bytes("POST", await this.#path(`/contexts/${contextId(context)}/interrupt`));
  }

  /**
   * Writes a whole file, creating parent directories (PUT .../files?path=&mode=).
   * data: bytes as is, or a string written as UTF-8 (empty is fine). mode: permission bits,
   * a number (0o755) or octal text ("755"); default 0644. Relative paths are under
   * /workspace; absolute ones anywhere the sandbox user may write ("/tmp/x"). Rejects with
   * SandboxAPIError 400 (a relative path climbing out of /workspace, bad mode), 403 (not
   * writable by the sandbox user: the read-only root file system, root's directories), 413
   * (too big).
   */
  async writeFile(
    path: string,
    data: Uint8Array | string,
    options: { mode?: number | string } = {},
  ): Promise<WriteResult> {
    const body = typeof data === "string" ? new TextEncoder().encode(data) : data;
    return this.#t.json("PUT", await this.#path("/files"), {
      query: { path, mode: modeText(options.mode) },
      body,
    });
  }

  /** Reads a whole file (GET .../files?path=): resolves with {path, content} where content is
   * the exact bytes. Relative paths are under /workspace; absolute ones may name any file the
   * sandbox user may read ("/etc/os-release"). Rejects with NotFoundError (missing),
   * SandboxAPIError 400 (a directory), 403 (not readable by the sandbox user). */
  async readFile(path: string): Promise<{ path: string; content: Uint8Array }> {
    const content = await this.#t.bytes("GET", await this.#path("/files"), { query: { path } });
    return { path, content };
  }

  /** readFile() decoded as UTF-8 text (invalid bytes become U+FFFD). */
  async readText(path: string): Promise<string> {
    return new TextDecoder().decode((await this.readFile(path)).content);
  }

  /** Lists a directory sorted by name, dotfiles included (GET .../files/list); recursive lists
   * the whole tree. Rejects with NotFoundError, SandboxAPIError 400 (not a directory). */
  async listFiles(path = "/workspace", options: { recursive?: boolean } = {}): Promise<FileInfo[]> {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const o: any = await this.#t.json("GET", await this.#path("/files/list"), {
      query: { path, recursive: options.recursive ? "true" : undefined },
    });
    return (o.entries ?? []).map(fileInfo);
  }

  /**
   * Watches a directory for changes (GET .../files/watch?path=&recursive=&max_queue=, NDJSON)
   * and resolves with a FileWatch once the watch is armed: every change after watchFiles()
   * resolves is reported, so make the changes you want to see after it. path: the directory
   * (relative paths are under /workspace, absolute ones anywhere the sandbox user may read;
   * default /workspace). options.recursive: also every
   * directory below it, and those made or moved in later; options.maxQueue: events the
   * sandbox holds for a reader that falls behind (1..65536, default 4096; beyond that one
   * {type:"overflow", dropped} says how many were lost); options.signal: closes the watch when
   * aborted. The FileWatch has path (absolute), watches (directories followed), is an
   * AsyncIterable of FileEvent ({type:"create"|"write"|"remove"|"rename"|"chmod", path, dir}
   * or {type:"overflow", dropped}) that ends when the directory is removed (endReason
   * "removed") or on close(), and has nextEvent(timeoutMs) (null when nothing came in time).
   * Rejects with NotFoundError (no such sandbox or directory), SandboxAPIError 400 (not a
   * directory, a relative path out of /workspace, maxQueue out of range), 403, 429 (8 watches already run in
   * this sandbox, or a recursive watch of more than 8192 directories),
   * SandboxConnectionError, or options.signal's reason; the iteration later rejects with
   * StreamError when the watch fails (e.g. code "backend_error": the sandbox was destroyed).
   */
  async watchFiles(path = "/workspace", options: WatchFilesOptions = {}): Promise<FileWatch> {
    const outer = options.signal;
    outer?.throwIfAborted();
    const abort = new AbortController();
    const onAbort = () => abort.abort(outer?.reason);
    outer?.addEventListener("abort", onAbort, { once: true });
    const unlisten = () => outer?.removeEventListener("abort", onAbort);
    let objects: AsyncGenerator<unknown> | undefined;
    try {
      const res = await this.#t.send("GET", await this.#path("/files/watch"), {
        query: {
          path,
          recursive: options.recursive ? "true" : undefined,
          max_queue: options.maxQueue,
        },
        accept: "application/x-ndjson",
        signal: abort.signal,
      });
      objects = ndjsonObjects(res, `file watch of ${path}`, abort.signal);
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const first: IteratorResult<any> = await objects.next();
      if (!first.done && first.value.type === "error") {
        throw new StreamError(first.value.code ?? "internal", first.value.message ?? "");
      }
      if (first.done || first.value.type !== "start") {
        throw new SandboxConnectionError(
          `file watch of ${path}: expected the start line, got ${JSON.stringify(first.value)}`,
        );
      }
      return new FileWatch(first.value, objects, abort, unlisten);
    } catch (e) {
      unlisten();
      abort.abort();
      await objects?.return(undefined).catch(() => {});
      throw e;
    }
  }

  /**
   * Node only: copies a local directory's contents (files, directories, symlinks, modes)
   * into remoteDir, created if missing, as one tar (PUT .../archive?path=).
   * Resolves with {entries, bytes} of the server.
   */
  async uploadDir(
    localDir: string,
    remoteDir = "/workspace",
  ): Promise<{ entries: number; bytes: number }> {
    const fs = await import("node:fs/promises");
    const nodePath = await import("node:path");
    const entries: TarEntry[] = [];
    const walk = async (dir: string, rel: string): Promise<void> => {
      const names = (await fs.readdir(dir)).sort();
      for (const name of names) {
        const full = nodePath.join(dir, name);
        const r = rel ? `${rel}/${name}` : name;
        const st = await fs.lstat(full);
        if (st.isSymbolicLink()) {
          const linkname = await fs.readlink(full);
          entries.push({ name: r, type: "symlink", mode: 0o777, linkname });
        } else if (st.isDirectory()) {
          entries.push({ name: r, type: "dir", mode: st.mode & 0o7777 });
          await walk(full, r);
        } else if (st.isFile()) {
          const data = await fs.readFile(full);
          entries.push({ name: r, type: "file", mode: st.mode & 0o7777, data });
        }
      }
    };
    await walk(localDir, "");
    return this.#t.json("PUT", await this.#path("/archive"), {
      query: { path: remoteDir },
      body: writeTar(entries),
    });
  }

  /**
   * Node only: copies remoteDir's contents into localDir (created if missing) from one tar
   * (GET .../archive?path=). Members that would land outside localDir (absolute, "..",
   * symlinks pointing out), hard links and devices are refused (Error) before anything is
   * written. Resolves with the number of entries written.
   */
  async downloadDir(remoteDir: string, localDir: string): Promise<number> {
    const fs = await import("node:fs/promises");
    const nodePath = await import("node:path");
    const tar = await this.#t.bytes("GET", await this.#path("/archive"), {
      query: { path: remoteDir },
    });
    const members = readTar(tar).filter((m) => m.name !== "" && m.name !== ".");
    const root = nodePath.resolve(localDir);
    for (const m of members) {
      const parts = m.name.split("/");
      if (m.name.startsWith("/") || parts.includes("..") || m.name.includes("\0")) {
        throw new Error(`downloadDir: unsafe member name ${JSON.stringify(m.name)}`);
      }
      if (m.type === "hardlink" || m.type === "other") {
        throw new Error(`downloadDir: refusing member ${JSON.stringify(m.name)} (${m.type})`);
      }
      if (m.type === "symlink") {
        const posix = nodePath.posix;
        const dest = posix.normalize(posix.join(posix.dirname(m.name), m.linkname));
        if (m.linkname.startsWith("/") || dest === ".." || dest.startsWith("../")) {
          throw new Error(`downloadDir: symlink ${JSON.stringify(m.name)} points outside`);
        }
      }
    }
    await fs.mkdir(root, { recursive: true });
    let count = 0;
    for (const m of members) {
      const target = nodePath.join(root, ...m.name.split("/"));
      if (m.type === "dir") {
        await fs.mkdir(target, { recursive: true });
        await fs.chmod(target, (m.mode & 0o7777) | 0o700);
      } else if (m.type === "symlink") {
        await fs.mkdir(nodePath.dirname(target), { recursive: true });
        await fs.rm(target, { force: true });
        await fs.symlink(m.linkname, target);
      } else {
        await fs.mkdir(nodePath.dirname(target), { recursive: true });
        await fs.rm(target, { force: true });
        await fs.writeFile(target, m.data, { mode: m.mode & 0o7777 });
        await fs.chmod(target, m.mode & 0o7777);
      }
      count++;
    }
    return count;
  }

  /** Makes a URL that opens `port` inside the sandbox in a browser, with no header (POST
   * .../previews; docs/adr/0015-preview-urls.md). Resolves with PreviewInfo: its `url` holds a
   * token that opens only this port, for options.ttlSeconds (default 3600; at most the
   * server's --preview-max-ttl-seconds, default 86400). Rejects with SandboxAPIError 400 (port
   * not 1..65535, ttl out of range), 409 (not running), 429 (100 live previews). */
  async previewUrl(port: number, options: { ttlSeconds?: number } = {}): Promise<PreviewInfo> {
    const body: Record<string, unknown> = { port };
    if (options.ttlSeconds !== undefined) body.ttl_seconds = Math.round(options.ttlSeconds);
    return previewInfo(await this.#t.json("POST", await this.#path("/previews"), { json: body }));
  }

  /** The live preview URLs of the sandbox (GET .../previews), oldest first, without url or
   * token (those are shown once); of one port when `port` is given. */
  async listPreviews(port?: number): Promise<PreviewInfo[]> {
    const query = { port: port === undefined ? undefined : String(port) };
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const o: any = await this.#t.json("GET", await this.#path("/previews"), { query });
    return (o.previews ?? []).map(previewInfo);
  }

  /** Revokes a preview URL (DELETE .../previews/{id}): it stops working at once. Rejects with
   * NotFoundError when it is not (or no longer) live. */
  async revokePreview(preview: PreviewInfo | string): Promise<void> {
    const id = typeof preview === "string" ? preview : preview.id;
    await this.#t.bytes("DELETE", await this.#path(`/previews/${encodeURIComponent(id)}`));
  }

  /** Snapshots the workspace (POST .../snapshots); name is an optional label. */
  async snapshot(name?: string): Promise<SnapshotInfo> {
    return snapshotInfo(
      await this.#t.json("POST", await this.#path("/snapshots"), {
        json: name ? { name } : undefined,
      }),
    );
  }

  /** Restores the workspace to one of this sandbox's snapshots (POST .../rollback); resolves
   * with the new SandboxInfo. Rejects with NotFoundError for an unknown snapshot. */
  async rollback(snapshot: SnapshotInfo | string): Promise<SandboxInfo> {
    const id = typeof snapshot === "string" ? snapshot : snapshot.id;
    this.#info = sandboxInfo(
      await this.#t.json("POST", await this.#path("/rollback"), { json: { snapshot_id: id } }),
    );
    return this.#info;
  }

  /** Forks this sandbox as it runs (POST /v1/sandboxes/{id}/fork): `count` new sandboxes
   * (1..the server's limit, 100 by default) with its template, limits, env and command defaults
   * and a copy of its workspace at one instant; this one runs on and no snapshot is left
   * behind. Children's processes start fresh (`memory` false). `timeoutSeconds`: each child's
   * TTL (default: this sandbox's). Resolves with one entry per child, in order: its Session or
   * the SandboxAPIError that kept it from being made (429 past the quota). Rejects with
   * SandboxAPIError when no child could be made (400 bad count, 404, 429 at the quota). */
  async forkRunning(options: { count?: number; timeoutSeconds?: number } = {}): Promise<ForkedChild[]> {
    const body: Record<string, unknown> = { count: options.count ?? 1 };
    if (options.timeoutSeconds !== undefined) body.timeout_seconds = options.timeoutSeconds;
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const o: any = await this.#t.json("POST", await this.#path("/fork"), { json: body });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    return (o.forks ?? []).map((f: any): ForkedChild => {
      if (f.sandbox) return { sandbox: new Session(this.#t, sandboxInfo(f.sandbox)), memory: !!f.memory };
      const status = Number(f.status ?? 0);
      const Err = status === 404 ? NotFoundError : SandboxAPIError;
      return {
        error: new Err(status, f.error?.code ?? `http_${status}`, f.error?.message ?? "", null),
        memory: false,
      };
    });
  }

  /** Sets the time to live to `seconds` from now (POST .../timeout); resolves with the new
   * SandboxInfo (its new expiresAt). Rejects with SandboxAPIError 400 when out of range. */
  async setTimeout(seconds: number): Promise<SandboxInfo> {
    this.#info = sandboxInfo(
      await this.#t.json("POST", await this.#path("/timeout"), {
        json: { timeout_seconds: Math.round(seconds) },
      }),
    );
    return this.#info;
  }

  /**
   * Pauses the sandbox (POST .../pause): every process stops where it is, memory and files
   * are kept, and its TTL stops; while paused, expiresAt is when the server destroys it (its
   * --paused-timeout-seconds). options.keepMemory false (E2B's keepMemory: false) keeps only
   * the files instead: every process ends, the sandbox holds disk only and no quota slot, and
   * resume() starts it afresh (same id, spec and /workspace; /tmp and processes gone).
   * Resolves with the new SandboxInfo (status "paused", pausedAt set, pausedMemory).
   * Commands, files and processes of a paused sandbox reject with SandboxAPIError 409
   * conflict until resume(). Rejects with SandboxAPIError 409 conflict when it is not running
   * (e.g. already paused), 503 when the server's backend cannot pause; NotFoundError.
   */
  async pause(options: PauseOptions = {}): Promise<SandboxInfo> {
    const body = options.keepMemory === false ? { memory: false } : {};
    this.#info = sandboxInfo(
      await this.#t.json("POST", await this.#path("/pause"), { json: body }),
    );
    return this.#info;
  }

  /**
   * Resumes a paused sandbox (POST .../resume): its processes go on where they stopped.
   * options.timeoutSeconds: the new time to live from now; omitted, its last TTL
   * (timeoutSeconds) from now. options.keepMemory false resumes by a reboot: every process
   * that ran before ends (one paused files-only always starts afresh). Resolves with the new
   * SandboxInfo (status "running", the new expiresAt). Rejects with SandboxAPIError 409
   * conflict when it is not paused, 400 for a timeout out of range, 429 when one paused
   * files-only finds the quota full; NotFoundError.
   */
  async resume(options: ResumeOptions = {}): Promise<SandboxInfo> {
    const body: Record<string, unknown> = {};
    if (options.timeoutSeconds !== undefined) {
      body.timeout_seconds = Math.round(options.timeoutSeconds);
    }
    if (options.keepMemory === false) body.memory = false;
    this.#info = sandboxInfo(
      await this.#t.json("POST", await this.#path("/resume"), { json: body }),
    );
    return this.#info;
  }

  /** Destroys the sandbox (DELETE /v1/sandboxes/{id}). Rejects with NotFoundError when it is
   * already gone, unless options.missingOk. */
  async destroy(options: { missingOk?: boolean } = {}): Promise<void> {
    try {
      await this.#t.bytes("DELETE", await this.#path());
    } catch (e) {
      if (options.missingOk && (e as { statusCode?: number }).statusCode === 404) return;
      throw e;
    }
  }
}
