// Sandbox: the client of one agent-sandbox server (seed A's entry point).
import { Transport } from "./http.js";
import { Session } from "./session.js";
import {
  sandboxInfo,
  snapshotInfo,
  templateInfo,
  type CreateOptions,
  type TemplateInfo,
  type ForkOptions,
  type ListOptions,
  type SnapshotInfo,
} from "./types.js";

/** Options of `new Sandbox()`. */
export interface SandboxOptions {
  /** Server URL; default $AGENT_SANDBOX_URL, else http://127.0.0.1:8080. */
  baseUrl?: string;
  /** API key, sent as "Authorization: Bearer <key>"; default $AGENT_SANDBOX_API_KEY. */
  apiKey?: string;
}

function env(name: string): string | undefined {
  const p = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  const v = p?.env?.[name];
  return v ? v : undefined;
}

/** The client of one server: creates and finds sessions (sandboxes) and snapshots. */
export class Sandbox {
  #t: Transport;

  /** Throws TypeError for a baseUrl that is not http(s). */
  constructor(options: SandboxOptions = {}) {
    this.#t = new Transport(
      options.baseUrl ?? env("AGENT_SANDBOX_URL") ?? "http://127.0.0.1:8080",
      options.apiKey ?? env("AGENT_SANDBOX_API_KEY"),
    );
  }

  /** The server's base URL (no trailing slash). */
  get baseUrl(): string {
    return this.#t.baseUrl;
  }

  /**
   * Creates and starts a sandbox (POST /v1/sandboxes). Returns the Session at once; the
   * creation runs in the background and its error (SandboxAPIError 400 invalid_request,
   * e.g. autoPause on a backend that cannot pause; 429 limit_exceeded, ...) rejects the
   * session's first call or `await session.ready()`.
   */
  create(options: CreateOptions = {}): Session {
    if (
      options.template !== undefined &&
      options.image !== undefined &&
      options.template !== options.image
    ) {
      throw new TypeError(
        `template ${JSON.stringify(options.template)} and image ${JSON.stringify(options.image)}: ` +
          "both given with different values (they are aliases)",
      );
    }
    const body: Record<string, unknown> = {};
    const map: [keyof CreateOptions, string][] = [
      ["template", "template"],
      ["cpus", "cpus"],
      ["memoryMb", "memory_mb"],
      ["pidsLimit", "pids_limit"],
      ["workspaceMb", "workspace_mb"],
      ["timeoutSeconds", "timeout_seconds"],
      ["idleTimeoutSeconds", "idle_timeout_seconds"],
      ["env", "env"],
      ["network", "network"],
      ["readOnlyRootfs", "read_only_rootfs"],
      ["autoPause", "auto_pause"],
      ["autoResume", "auto_resume"],
      ["autoPauseKeepMemory", "auto_pause_keep_memory"],
      ["backend", "backend"],
      ["allowPublicTraffic", "allow_public_traffic"],
      ["maskRequestHost", "mask_request_host"],
    ];
    for (const [k, wire] of map) if (options[k] !== undefined) body[wire] = options[k];
    if (body.template === undefined && options.image !== undefined) body.template = options.image;
    const headers: Record<string, string> = {};
    if (options.idempotencyKey !== undefined) headers["Idempotency-Key"] = options.idempotencyKey;
    const info = this.#t
      .json("POST", "/v1/sandboxes", { json: body, headers })
      .then(sandboxInfo);
    return new Session(this.#t, info);
  }

  /** The session of an existing sandbox (GET /v1/sandboxes/{id}); NotFoundError if none. */
  async get(id: string): Promise<Session> {
    return new Session(this.#t, sandboxInfo(await this.#t.json("GET", `/v1/sandboxes/${id}`)));
  }

  /**
   * Every sandbox this key can see (GET /v1/sandboxes), oldest first; options.order "desc":
   * newest first. template, status ("running", "paused", ...) and a window of creation times
   * (startedAfter inclusive, startedBefore exclusive: a Date, RFC 3339 UTC text or Unix ms)
   * filter. Rejects with SandboxAPIError 400 for a bad value.
   */
  async list(options: ListOptions = {}): Promise<Session[]> {
    const time = (t: Date | string | number | undefined) =>
      t instanceof Date ? t.toISOString() : t === undefined ? undefined : String(t);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const o: any = await this.#t.json("GET", "/v1/sandboxes", {
      query: {
        order: options.order,
        template: options.template,
        status: options.status,
        started_after: time(options.startedAfter),
        started_before: time(options.startedBefore),
      },
    });
    return (o.sandboxes ?? []).map((s: unknown) => new Session(this.#t, sandboxInfo(s)));
  }

  /** Seed B's name for list(): every sandbox this key can see. */
  listSandboxes(): Promise<Session[]> {
    return this.list();
  }

  /** The server's liveness (GET /healthz, no key needed): {status: "ok", version, backend}.
   * Rejects with SandboxConnectionError when it does not answer. */
  async health(): Promise<{ status: string; version: string; backend: string }> {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    return (await this.#t.json("GET", "/healthz")) as any;
  }

  /** The isolation backends the server knows (GET /v1/backends): the default's name and, per
   * backend, whether it is available now, why not, its accelerator ("kvm"/"tcg" for microvm,
   * null for ns) and capabilities. CreateOptions.backend names one of them. */
  async backends(): Promise<{
    default: string;
    backends: {
      name: string;
      available: boolean;
      reason: string | null;
      accelerator: string | null;
      capabilities: Record<string, boolean>;
    }[];
  }> {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    return (await this.#t.json("GET", "/v1/backends")) as any;
  }

  /** Starts a new sandbox whose workspace is a snapshot's (POST /v1/snapshots/{id}/fork);
   * options override the source's settings. Rejects with NotFoundError, SandboxAPIError. */
  async fork(snapshot: SnapshotInfo | string, options: ForkOptions = {}): Promise<Session> {
    const id = typeof snapshot === "string" ? snapshot : snapshot.id;
    const body: Record<string, unknown> = {};
    if (options.cpus !== undefined) body.cpus = options.cpus;
    if (options.memoryMb !== undefined) body.memory_mb = options.memoryMb;
    if (options.network !== undefined) body.network = options.network;
    if (options.timeoutSeconds !== undefined) body.timeout_seconds = options.timeoutSeconds;
    const o = await this.#t.json("POST", `/v1/snapshots/${id}/fork`, { json: body });
    return new Session(this.#t, sandboxInfo(o));
  }

  /** Every installed template (GET /v1/templates), sorted by name. */
  async listTemplates(): Promise<TemplateInfo[]> {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const o: any = await this.#t.json("GET", "/v1/templates");
    return (o.templates ?? []).map(templateInfo);
  }

  /** One template (GET /v1/templates/{name}); NotFoundError when it is not installed. */
  async getTemplate(name: string): Promise<TemplateInfo> {
    return templateInfo(await this.#t.json("GET", `/v1/templates/${encodeURIComponent(name)}`));
  }

  /** One snapshot (GET /v1/snapshots/{id}); NotFoundError if none. */
  async getSnapshot(id: string): Promise<SnapshotInfo> {
    return snapshotInfo(await this.#t.json("GET", `/v1/snapshots/${id}`));
  }

  /** Snapshots (GET /v1/snapshots), of one sandbox when sandboxId is given. */
  async listSnapshots(sandboxId?: string): Promise<SnapshotInfo[]> {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const o: any = await this.#t.json("GET", "/v1/snapshots", { query: { sandbox_id: sandboxId } });
    return (o.snapshots ?? []).map(snapshotInfo);
  }

  /** Deletes a snapshot (DELETE /v1/snapshots/{id}); NotFoundError if none. */
  async deleteSnapshot(snapshot: SnapshotInfo | string): Promise<void> {
    const id = typeof snapshot === "string" ? snapshot : snapshot.id;
    await this.#t.bytes("DELETE", `/v1/snapshots/${id}`);
  }
}
