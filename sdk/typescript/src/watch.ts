// Directory watches: FileWatch, the handle of Session.watchFiles(). The REST route is
// GET /v1/sandboxes/{id}/files/watch?path=&recursive=&max_queue= (NDJSON; api/openapi.json
// "watchFiles"): a "start" line once the watch is armed, one line per change, "overflow" when
// events were lost, "keepalive" after quiet, and last "end" (the directory went away) or
// "error". Closing the connection ends the watch in the sandbox.
import { SandboxConnectionError, StreamError } from "./errors.js";
import type { FileEvent } from "./types.js";

/** Options of Session.watchFiles(). */
export interface WatchFilesOptions {
  /** Also watch every directory below, and those made or moved in later (default false). */
  recursive?: boolean;
  /** Events the sandbox holds for a reader that falls behind, 1..65536 (default 4096); beyond
   * that newer ones are dropped and reported as one {type: "overflow", dropped}. */
  maxQueue?: number;
  /** Closes the watch when aborted (e.g. AbortSignal.timeout(ms)): a waiting iteration or
   * nextEvent() then rejects with signal.reason. */
  signal?: AbortSignal;
}

const CHANGES = new Set(["create", "write", "remove", "rename", "chmod"]);
const TIMED_OUT = Symbol("timed out");

/** A change or overflow line as a FileEvent; undefined for any other line (internal). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function fileEventOf(ev: any): FileEvent | undefined {
  if (CHANGES.has(ev.type)) return { type: ev.type, path: ev.path ?? "", dir: Boolean(ev.dir) };
  if (ev.type === "overflow") return { type: "overflow", dropped: ev.dropped ?? 0 };
  return undefined;
}

/**
 * A running watch of one sandbox directory, from Session.watchFiles(). The watch was armed
 * before watchFiles() resolved: every change after that is reported.
 *
 * It is an AsyncIterable of FileEvent: `for await (const ev of watch)` gets the changes as
 * they happen and ends when the watched directory is removed (endReason "removed";
 * "unmounted" when its file system went away) or after close(). Breaking out of the loop
 * closes the watch. nextEvent(timeoutMs) waits for one event with a time limit. An error of
 * the watch after it started rejects with StreamError (code e.g. "backend_error" when the
 * sandbox was destroyed), a broken connection with SandboxConnectionError. Keepalives never
 * surface. Iterate it once at a time (one loop, or nextEvent() calls): each event is
 * delivered once.
 */
export class FileWatch implements AsyncIterable<FileEvent> {
  /** The watched directory, absolute in the sandbox ("/workspace/src"). */
  readonly path: string;
  /** How many directories the watch followed when it started: 1, or with recursive the
   * directory and every one below it. */
  readonly watches: number;
  #objects: AsyncGenerator<unknown>;
  #events: AsyncGenerator<FileEvent, void, undefined>;
  #pending: Promise<IteratorResult<FileEvent, void>> | undefined;
  #reading = false; // a next() of the underlying iteration is in flight
  #abort: AbortController;
  #unlisten: () => void;
  #closed = false;
  #done = false;
  #endReason: string | undefined;

  /** @internal */
  constructor(
    start: { path?: string; watches?: number },
    objects: AsyncGenerator<unknown>,
    abort: AbortController,
    unlisten: () => void,
  ) {
    this.path = start.path ?? "";
    this.watches = start.watches ?? 0;
    this.#objects = objects;
    this.#abort = abort;
    this.#unlisten = unlisten;
    this.#events = this.#run();
  }

  /** How the watch ended by itself: "removed" (the directory went away) or "unmounted";
   * undefined while it runs, and after close() or an error. */
  get endReason(): string | undefined {
    return this.#endReason;
  }

  /** True once the watch is over: closed, ended, or failed. */
  get closed(): boolean {
    return this.#done;
  }

  async *#run(): AsyncGenerator<FileEvent, void, undefined> {
    try {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      for await (const ev of this.#objects as AsyncGenerator<any>) {
        const event = fileEventOf(ev);
        if (event) {
          yield event;
        } else if (ev.type === "end") {
          this.#endReason = ev.reason ?? "";
          return;
        } else if (ev.type === "error") {
          throw new StreamError(ev.code ?? "internal", ev.message ?? "");
        }
        // "keepalive" and unknown types are skipped.
      }
      if (!this.#closed) {
        throw new SandboxConnectionError(`file watch of ${this.path} ended without an end event`);
      }
    } catch (e) {
      if (this.#closed) return; // close() aborted the read
      throw e;
    } finally {
      this.#finish();
    }
  }

  #finish(): void {
    this.#done = true;
    this.#unlisten();
    this.#abort.abort(); // releases the connection (a no-op once the answer ended)
  }

  /** The next result of the one underlying iteration, shared by the loop and nextEvent(): a
   * result that arrives after a nextEvent() timeout stays here until a later call takes it
   * (clearing it when it resolved lost that event when nobody was waiting yet). */
  #take(): Promise<IteratorResult<FileEvent, void>> {
    if (!this.#pending) {
      // After close() nothing more comes, also not an event the read had already buffered.
      const over: IteratorResult<FileEvent, void> = { done: true, value: undefined };
      this.#reading = true;
      this.#pending = this.#events.next().then(
        (r) => {
          this.#reading = false;
          return this.#closed ? over : r;
        },
        (e) => {
          this.#reading = false;
          if (this.#closed) return over;
          throw e;
        },
      );
    }
    return this.#pending;
  }

  /** Takes the pending result out: the caller now owns it. */
  #consume(p: Promise<IteratorResult<FileEvent, void>>): void {
    if (this.#pending === p) this.#pending = undefined;
  }

  /**
   * Waits for the next change. timeoutMs: the longest wait in milliseconds (omitted: as long
   * as it takes). Resolves with the FileEvent, with null when the time passed with no event
   * (the watch keeps running and the event still comes to the next call), and with null at
   * once when the watch is over (`closed` true; endReason says "removed" when the directory
   * went away). Rejects with StreamError when the watch failed after it started (e.g. code
   * "backend_error": the sandbox was destroyed), SandboxConnectionError when the connection
   * broke, options.signal's reason when it aborted.
   */
  async nextEvent(timeoutMs?: number): Promise<FileEvent | null> {
    const next = this.#take();
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const r =
        timeoutMs === undefined
          ? await next
          : await Promise.race([
              next,
              new Promise<typeof TIMED_OUT>((ok) => (timer = setTimeout(ok, timeoutMs, TIMED_OUT))),
            ]);
      if (r === TIMED_OUT) return null; // `next` stays pending for the next call
      this.#consume(next);
      return r.done ? null : r.value;
    } catch (e) {
      this.#consume(next);
      throw e;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Iterates the changes (see the class); breaking out of the loop closes the watch. */
  [Symbol.asyncIterator](): AsyncIterator<FileEvent, void, undefined> {
    return {
      next: () => {
        const p = this.#take();
        this.#consume(p);
        return p;
      },
      return: async () => {
        await this.close();
        return { done: true, value: undefined };
      },
    };
  }

  /** Stops the watch: closes the connection, which ends it in the sandbox (it no longer counts
   * against the sandbox's 8 watches). A waiting iteration or nextEvent() then ends (done /
   * null); events not yet taken are discarded. Safe to call more than once. */
  async close(): Promise<void> {
    if (this.#done) return;
    this.#closed = true;
    this.#finish();
    // A read in progress rejects with the abort, which #run takes as the end. Without one,
    // return() ends both generators (ndjsonObjects then releases the body).
    if (!this.#reading) {
      this.#pending = undefined;
      await this.#events.return().catch(() => {});
      await this.#objects.return(undefined).catch(() => {});
    }
  }
}
