/**
 * Errors thrown by the SDK. Every failed call rejects with a subclass of SandboxError:
 * - SandboxAPIError: the server answered an error status, with its error shape
 *   `{"error":{"code","message"}}` (docs/adr/0007-rest-api-server.md);
 * - NotFoundError: a SandboxAPIError with status 404;
 * - SandboxConnectionError: the server could not be reached or the connection broke;
 * - StreamError: a followed process stream ended with an error event (waitProcess).
 */

/** Base class of every error the SDK throws. */
export class SandboxError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The server answered an HTTP error status. */
export class SandboxAPIError extends SandboxError {
  /** HTTP status, e.g. 400, 401, 404, 429. */
  readonly statusCode: number;
  /** Server error code, e.g. "invalid_request", "not_found", "unauthorized";
   * "http_<status>" when the body was not the error shape. */
  readonly code: string;
  /** The X-Request-Id of the answer, for the server's logs (null if absent). */
  readonly requestId: string | null;

  constructor(statusCode: number, code: string, message: string, requestId: string | null) {
    super(message);
    this.statusCode = statusCode;
    this.code = code;
    this.requestId = requestId;
  }
}

/** HTTP 404: the sandbox, snapshot or file does not exist (or belongs to another key). */
export class NotFoundError extends SandboxAPIError {}

/** The server could not be reached, or the connection failed mid-answer. */
export class SandboxConnectionError extends SandboxError {}

/** A stream ended with an error event instead of its exit (e.g. the sandbox was destroyed
 * while a waitProcess() was following the process); code is the server's error code, e.g.
 * "backend_error". Thrown by waitProcess(); streams yield such events instead. */
export class StreamError extends SandboxError {
  readonly code: string;

  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}
