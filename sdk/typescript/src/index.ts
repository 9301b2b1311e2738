/**
 * @agent-sandbox/sdk: TypeScript client of the agent-sandbox server. Zero runtime
 * dependencies; native fetch (Node >= 18).
 *
 *   import { Sandbox } from "@agent-sandbox/sdk";
 *   const session = new Sandbox().create();      // $AGENT_SANDBOX_URL, $AGENT_SANDBOX_API_KEY
 *   console.log((await session.exec("echo hi")).stdout);
 *   await session.destroy();
 */
export { Sandbox, type SandboxOptions } from "./sandbox.js";
export { Session, defaultLanguage, type ForkedChild } from "./session.js";
export {
  NotFoundError,
  SandboxAPIError,
  SandboxConnectionError,
  SandboxError,
  StreamError,
} from "./errors.js";
export {
  ProcessHandle,
  type StreamProcessOptions,
  type WaitProcessOptions,
} from "./process.js";
export { FileWatch, type WatchFilesOptions } from "./watch.js";
export {
  Result,
  type Chart,
  type Context,
  type Execution,
  type ExecutionError,
  type RunCodeOptions,
} from "./code.js";
export type {
  CreateOptions,
  ExecEvent,
  ExecOptions,
  ExecResult,
  ExitInfo,
  FileEvent,
  FileInfo,
  ForkOptions,
  ListOptions,
  OutputChunk,
  PreviewInfo,
  ProcessEvent,
  ProcessExit,
  ProcessInfo,
  PauseOptions,
  ResumeOptions,
  SandboxInfo,
  SnapshotInfo,
  StartProcessOptions,
  TemplateInfo,
  WriteResult,
} from "./types.js";
