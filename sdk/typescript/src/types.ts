// Shapes returned by the SDK (camelCase views of the server's JSON).

/** The server's view of a sandbox. Times are RFC 3339 UTC text; cpus in cores; memoryMb and
 * workspaceMb in MiB; timeouts in seconds. */
export interface SandboxInfo {
  id: string;
  /** "creating", "running", "paused", "stopping", "destroyed" or "error". */
  status: string;
  template: string;
  /** Seed B's name for template (the same value). */
  image: string;
  /** The isolation it runs on: "ns" (Linux namespaces) or "microvm" (a VM, its own kernel). */
  backend: string;
  cpus: number;
  memoryMb: number;
  pidsLimit: number;
  workspaceMb: number;
  network: boolean;
  readOnlyRootfs: boolean;
  envKeys: string[];
  /** Cwd of commands that name none: the template's WORKDIR, else /workspace. */
  defaultWorkdir: string;
  /** User of commands that name none: the template's USER ("sandbox" or "root"). */
  defaultUser: string;
  createdAt: string;
  /** When the TTL ends; while paused, when the paused sandbox is destroyed (the server's
   * --paused-timeout-seconds after pausedAt). */
  expiresAt: string;
  timeoutSeconds: number;
  idleTimeoutSeconds: number;
  /** The snapshot its workspace came from last: a fork's, or the last rollback's (seed B). */
  sourceSnapshotId: string | null;
  /** Its origin: the snapshot it was forked from; a rollback never changes it. */
  forkedFromSnapshotId: string | null;
  /** The snapshot of its last rollback and when (RFC 3339), or null. */
  lastRollback: { snapshotId: string; at: string } | null;
  /** The key lineage that made it; only in an admin key's list. */
  owner?: string;
  /** Its TTL or idle timeout pauses it instead of destroying it (CreateOptions.autoPause). */
  autoPause: boolean;
  /** How autoPause pauses: true keeps the memory (a freeze), false only the files. */
  autoPauseKeepMemory: boolean;
  /** While paused, a request that needs it running resumes it (CreateOptions.autoResume). */
  autoResume: boolean;
  /** Its ports answer on their preview hosts without a token (CreateOptions). */
  allowPublicTraffic: boolean;
  /** The Host header requests to its ports carry (CreateOptions), null: 127.0.0.1:<port>. */
  maskRequestHost: string | null;
  /** When it was paused; null unless status is "paused". */
  pausedAt: string | null;
  /**
   * While paused: true when its memory was kept (resume continues where it stopped), false when
   * only its files were (resume starts it afresh); null unless status is "paused".
   */
  pausedMemory: boolean | null;
  errorMessage?: string;
  /** The server's JSON as it came (snake_case; seed B's Sandbox.data). */
  raw: Record<string, unknown>;
}

/** Options of Sandbox.create(); omitted values take the server's defaults. */
export interface CreateOptions {
  /** Template name (default "base"). */
  template?: string;
  /** Seed B's name for template; both given with different values: TypeError. */
  image?: string;
  /**
   * The isolation backend, one that backends() lists as available: "ns" or "microvm" (default:
   * the server's). SandboxAPIError 400 for an unknown one, 503 with the reason for one the
   * server cannot run here.
   */
  backend?: string;
  /**
   * Seed B's option. Every sandbox's root file system is its template, mounted read-only:
   * true is what every sandbox has, false rejects with SandboxAPIError 400.
   */
  readOnlyRootfs?: boolean;
  /** CPU cores, e.g. 0.5. */
  cpus?: number;
  /** Memory limit in MiB. */
  memoryMb?: number;
  /** Process limit. */
  pidsLimit?: number;
  /** Workspace size in MiB. */
  workspaceMb?: number;
  /** Time to live in seconds. */
  timeoutSeconds?: number;
  /** Idle time after which the sandbox is reaped, in seconds. */
  idleTimeoutSeconds?: number;
  /** Variables set for every command. */
  env?: Record<string, string>;
  /** Network access (default false). */
  network?: boolean;
  /**
   * Pause the sandbox instead of destroying it when its TTL or idle timeout passes (default
   * false); resume() lets it go on, and the server destroys it after its paused timeout.
   * SandboxAPIError 400 when the server's backend cannot pause.
   */
  autoPause?: boolean;
  /**
   * While paused, a request that needs it running (exec, files, processes, ports, code)
   * resumes it and is then served instead of answering 409 (default false).
   */
  autoResume?: boolean;
  /** false: autoPause keeps only the files, as pause({ keepMemory: false }) (default true). */
  autoPauseKeepMemory?: boolean;
  /**
   * true: its ports answer on their preview hosts (`<port>-<id>.<preview domain>`) to anyone,
   * with no preview or traffic token (E2B's allowPublicTraffic). Default false.
   */
  allowPublicTraffic?: boolean;
  /**
   * The Host header every request to one of its ports carries, "${PORT}" replaced by the port
   * (E2B's maskRequestHost), e.g. "localhost:${PORT}". Default: 127.0.0.1:<port>.
   */
  maskRequestHost?: string;
  /**
   * Sent as Idempotency-Key (1-255 printable ASCII): a retry with the same key returns the same
   * sandbox instead of making a second one; the key with other options is 409 conflict.
   */
  idempotencyKey?: string;
}

/** Options of Session.resume(). */
export interface ResumeOptions {
  /** The new time to live in seconds, from now; omitted: its last TTL (timeoutSeconds). */
  timeoutSeconds?: number;
  /** false: resume by a reboot, ending every process that ran before (default true). */
  keepMemory?: boolean;
}

/** Options of Sandbox.list(): the order and the filters of GET /v1/sandboxes. */
export interface ListOptions {
  /** "asc" (the default): oldest first; "desc": newest first. */
  order?: "asc" | "desc";
  /** Only sandboxes of this template. */
  template?: string;
  /** Only sandboxes in this state: "creating", "running", "paused", "stopping" or "error". */
  status?: string;
  /** Only sandboxes created at or after this time. */
  startedAfter?: Date | string | number;
  /** Only sandboxes created before this time. */
  startedBefore?: Date | string | number;
}

/** Options of Session.pause(). */
export interface PauseOptions {
  /**
   * false: keep only the files (every process ends, no quota slot is held; resume starts it
   * afresh). Default true: a freeze that keeps the memory.
   */
  keepMemory?: boolean;
}

/** Options of Sandbox.fork(): overrides of the source sandbox's settings. */
export interface ForkOptions {
  cpus?: number;
  memoryMb?: number;
  network?: boolean;
  timeoutSeconds?: number;
}

/** Options of exec / execStream / run. */
export interface ExecOptions {
  /** Arguments: with args, `command` is the program and nothing is shell-expanded. */
  args?: string[];
  /** Extra environment variables. */
  env?: Record<string, string>;
  /** Working directory; relative paths are under /workspace. */
  cwd?: string;
  /** Kill the command after this many seconds (the result then has timedOut true). */
  timeoutSeconds?: number;
  /** Text fed to the command's stdin. */
  stdin?: string;
  /** Cap on the bytes kept of each stream (stdout and stderr separately). */
  maxOutputBytes?: number;
  /** "sandbox" (default) or "root". */
  user?: "sandbox" | "root";
}

/** One piece of output, in the order the command wrote it. */
export interface OutputChunk {
  type: "stdout" | "stderr";
  data: string;
}

/** How a command ended. */
export interface ExitInfo {
  exitCode: number;
  /** The signal that ended it, 0 if none. */
  signal: number;
  timedOut: boolean;
  /** Either stream went past its cap (maxOutputBytes applies to each stream separately). */
  truncated: boolean;
  /** stdout was cut at its cap. */
  stdoutTruncated: boolean;
  /** stderr was cut at its cap (not shared with stdout). */
  stderrTruncated: boolean;
  oomKilled: boolean;
  /** The sandbox's pids limit refused a fork while the command ran. */
  pidsLimited: boolean;
  /** Wall-clock run time in milliseconds. */
  durationMs: number;
}

/** The result of exec / run / runCode. A non-zero exit is not an error: check `ok`. */
export interface ExecResult extends ExitInfo {
  stdout: string;
  stderr: string;
  /** exitCode 0, not timed out, no signal. */
  ok: boolean;
  /** The output as chunks (stdout then stderr; seed A's `result.output[0].data`). */
  output: OutputChunk[];
}

/** Events of execStream: output chunks, then exactly one "exit" or "error". */
export type ExecEvent =
  | OutputChunk
  | ({ type: "exit"; ok: boolean } & ExitInfo)
  | { type: "error"; code: string; message: string };

/** An entry of listFiles (the server's stat shape). mode is the permission bits as a number
 * (e.g. 0o644); mtime is RFC 3339 text; linkTarget only for symlinks. */
export interface FileInfo {
  name: string;
  path: string;
  type: "file" | "dir" | "symlink" | "fifo" | "socket" | "char" | "block";
  size: number;
  mode: number;
  uid: number;
  gid: number;
  mtime: string;
  /** Seed B's name for mtime (the same value). */
  modifiedAt: string;
  linkTarget?: string;
}

/** A change of a directory watched with Session.watchFiles(). type: "create" (made, or moved
 * into the directory), "write" (contents changed; repeated writes of one path in a row come as
 * one event), "remove", "rename" (moved away from path; where it went, if still watched, comes
 * as a create), "chmod" (mode, owner or times changed); path is absolute in the sandbox
 * ("/workspace/src/a.txt"), dir whether the entry is a directory. "overflow": events were lost
 * because the reader fell behind; dropped is how many (0 when unknown: the kernel's own queue
 * overflowed, or a new directory could not be watched). */
export type FileEvent =
  | { type: "create" | "write" | "remove" | "rename" | "chmod"; path: string; dir: boolean }
  | { type: "overflow"; dropped: number };

/** The answer of writeFile: the absolute path, size in bytes and mode as octal text, and seed
 * B's FileInfo fields as the server sends them (name, type "file", modified_at RFC 3339). */
export interface WriteResult {
  path: string;
  size: number;
  mode: string;
  name: string;
  type: "file";
  modified_at: string;
}

/** A preview URL of one port of a sandbox (Session.previewUrl(); docs/adr/0015). `url` is what
 * a browser opens with no header; it holds `token`, which opens this port of this sandbox and
 * nothing of the API, until expiresAt or revokePreview(). Both are only in the answer of
 * previewUrl() (null in listPreviews()). `host` is "<port>-sb-<hex>.<preview domain>";
 * createdBy the id of the API key that made it; times are RFC 3339 UTC text. */
export interface PreviewInfo {
  id: string;
  sandboxId: string;
  port: number;
  host: string;
  createdBy: string;
  createdAt: string;
  expiresAt: string;
  url: string | null;
  token: string | null;
}

/** A snapshot of a workspace; sizes in bytes. */
export interface SnapshotInfo {
  id: string;
  sandboxId: string | null;
  name: string | null;
  template: string;
  /** Seed B's name for template (the same value). */
  image: string;
  sizeBytes: number;
  contentBytes: number;
  createdAt: string;
}

/** A background process (GET /v1/sandboxes/{id}/processes/{pid}). pid is the process id
 * inside the sandbox; argv is as started (empty when a shell command was given, then command
 * holds it); exitCode is null while running, else the exit status or 128+signal; signal is
 * the signal that ended it (0 if none); startedAt/endedAt are RFC 3339 UTC text (endedAt null
 * while running); outputBytes counts output written so far, both streams. */
export interface ProcessInfo {
  pid: number;
  tag: string;
  argv: string[];
  command: string | null;
  state: "running" | "exited";
  exitCode: number | null;
  signal: number;
  startedAt: string;
  endedAt: string | null;
  pty: boolean;
  stdinOpen: boolean;
  outputBytes: number;
}

/** Options of Session.startProcess(); omitted values take the server's defaults. */
export interface StartProcessOptions {
  /** Arguments: with args, `command` is the program and nothing is shell-expanded. */
  args?: string[];
  /** Extra environment variables. */
  env?: Record<string, string>;
  /** Working directory; relative paths are under /workspace (404 if it does not exist). */
  cwd?: string;
  /** "sandbox" (default) or "root". */
  user?: "sandbox" | "root";
  /** A label shown by listProcesses (at most 256 bytes). */
  tag?: string;
  /** Give the process a stdin pipe (writeStdin, closeStdin); default false: /dev/null. */
  stdin?: boolean;
  /** Run it on a pseudo-terminal (implies stdin; all output arrives as "stdout"). */
  pty?: boolean;
  /** PTY size in character cells, each 1..10000 (default 80 x 24). */
  cols?: number;
  rows?: number;
  /** Bytes of recent output kept for replay: 1..4194304 (default 262144 = 256 KiB). */
  ringBytes?: number;
}

/** How a background process ended: exitCode is the status or 128+signal, signal the signal
 * that ended it (0 if none); ok is exitCode 0 and no signal. */
export interface ProcessExit {
  exitCode: number;
  signal: number;
  ok: boolean;
}

/** Events of streamProcess: output chunks and "skipped" (this reader fell behind the replay
 * ring and `bytes` of output were lost to it), then exactly one "exit" or "error". */
export type ProcessEvent =
  | OutputChunk
  | { type: "skipped"; bytes: number }
  | ({ type: "exit" } & ProcessExit)
  | { type: "error"; code: string; message: string };

// ---- conversions from the wire (snake_case) ------------------------------------------------

/* eslint-disable @typescript-eslint/no-explicit-any */
export function sandboxInfo(o: any): SandboxInfo {
  const info: SandboxInfo = {
    id: o.id,
    status: o.status,
    template: o.template,
    image: o.image ?? o.template,
    backend: o.backend ?? "",
    cpus: o.cpus,
    memoryMb: o.memory_mb,
    pidsLimit: o.pids_limit,
    workspaceMb: o.workspace_mb,
    network: o.network,
    readOnlyRootfs: o.read_only_rootfs,
    envKeys: o.env_keys ?? [],
    defaultWorkdir: o.default_workdir ?? "/workspace",
    defaultUser: o.default_user ?? "sandbox",
    createdAt: o.created_at,
    expiresAt: o.expires_at,
    timeoutSeconds: o.timeout_seconds,
    idleTimeoutSeconds: o.idle_timeout_seconds,
    sourceSnapshotId: o.source_snapshot_id ?? null,
    forkedFromSnapshotId: o.forked_from_snapshot_id ?? null,
    ...(typeof o.owner === "string" ? { owner: o.owner } : {}),
    lastRollback: o.last_rollback
      ? { snapshotId: o.last_rollback.snapshot_id, at: o.last_rollback.at }
      : null,
    autoPause: o.auto_pause ?? false,
    autoPauseKeepMemory: o.auto_pause_keep_memory ?? true,
    autoResume: o.auto_resume ?? false,
    allowPublicTraffic: o.allow_public_traffic ?? false,
    maskRequestHost: o.mask_request_host ?? null,
    pausedAt: o.paused_at ?? null,
    pausedMemory: o.paused_memory ?? null,
    raw: { ...o },
  };
  if (o.error_message) info.errorMessage = o.error_message;
  return info;
}

export function previewInfo(o: any): PreviewInfo {
  return {
    id: o.id,
    sandboxId: o.sandbox_id,
    port: o.port,
    host: o.host,
    createdBy: o.created_by ?? "",
    createdAt: o.created_at,
    expiresAt: o.expires_at,
    url: o.url ?? null,
    token: o.token ?? null,
  };
}

export function snapshotInfo(o: any): SnapshotInfo {
  return {
    id: o.id,
    sandboxId: o.sandbox_id ?? null,
    name: o.name ?? null,
    template: o.template,
    image: o.image ?? o.template,
    sizeBytes: o.size_bytes,
    contentBytes: o.content_bytes,
    createdAt: o.created_at,
  };
}

export function fileInfo(o: any): FileInfo {
  const f: FileInfo = {
    name: o.name,
    path: o.path,
    type: o.type,
    size: o.size,
    mode: parseInt(o.mode, 8),
    uid: o.uid,
    gid: o.gid,
    mtime: o.mtime,
    modifiedAt: o.modified_at ?? o.mtime,
  };
  if (o.link_target !== undefined) f.linkTarget = o.link_target;
  return f;
}

export function exitInfo(o: any): ExitInfo {
  return {
    exitCode: o.exit_code,
    signal: o.signal ?? 0,
    timedOut: Boolean(o.timed_out),
    truncated: Boolean(o.truncated),
    stdoutTruncated: Boolean(o.stdout_truncated),
    stderrTruncated: Boolean(o.stderr_truncated),
    oomKilled: Boolean(o.oom_killed),
    pidsLimited: Boolean(o.pids_limited),
    durationMs: o.duration_ms ?? 0,
  };
}

export function processInfo(o: any): ProcessInfo {
  return {
    pid: o.pid,
    tag: o.tag ?? "",
    argv: o.argv ?? [],
    command: o.command ?? null,
    state: o.state,
    exitCode: o.exit_code ?? null,
    signal: o.signal ?? 0,
    startedAt: o.started_at,
    endedAt: o.ended_at ?? null,
    pty: Boolean(o.pty),
    stdinOpen: Boolean(o.stdin_open),
    outputBytes: o.output_bytes ?? 0,
  };
}

export function isOk(e: ExitInfo): boolean {
  return e.exitCode === 0 && !e.timedOut && !e.signal;
}

/** An installed template (GET /v1/templates): seed A's manifest fields plus ours. resources
 * are the defaults a create gets; createdAt is null for an older template. */
export interface TemplateInfo {
  name: string;
  displayName: string;
  description: string;
  version: string;
  base: string;
  tools: string[];
  packages: string[];
  env: Record<string, string>;
  resources: { cpus: number; memoryMb: number; workspaceMb: number };
  createdAt: string | null;
  sizeBytes: number;
  defaultWorkdir: string;
  defaultUser: "sandbox" | "root";
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function templateInfo(o: any): TemplateInfo {
  const r = o.resources ?? {};
  return {
    name: o.name,
    displayName: o.display_name ?? o.name,
    description: o.description ?? "",
    version: o.version ?? "",
    base: o.base ?? "",
    tools: o.tools ?? [],
    packages: o.packages ?? [],
    env: o.env ?? {},
    resources: { cpus: r.cpus ?? 0, memoryMb: r.memory_mb ?? 0, workspaceMb: r.workspace_mb ?? 0 },
    createdAt: o.created_at ?? null,
    sizeBytes: o.size_bytes ?? 0,
    defaultWorkdir: o.default_workdir ?? "/workspace",
    defaultUser: o.default_user ?? "sandbox",
  };
}
