"""Value types returned by the SDK (plain dataclasses built from the server's JSON)."""

import abc
import base64
from dataclasses import dataclass, field
from typing import Dict, List, Optional


@dataclass
class ExecResult:
    """The outcome of Sandbox.exec().

    stdout, stderr: the output as text (UTF-8, invalid bytes replaced by the server).
    exit_code: the command's exit status (int; 128+N is not used for signals, see signal).
    signal: the signal that ended the command, 0 if none.
    timed_out: True when the exec's timeout killed the command.
    truncated: True when either stream went past max_output_bytes (stdout_truncated or
        stderr_truncated); the cap applies to each stream separately.
    stdout_truncated, stderr_truncated: which stream was cut.
    oom_killed: True when the sandbox ran out of memory during the command.
    pids_limited: True when the sandbox's pids limit refused a fork while the command ran.
    duration_ms: wall-clock run time in milliseconds.
    """

    stdout: str
    stderr: str
    exit_code: int
    signal: int = 0
    timed_out: bool = False
    truncated: bool = False
    oom_killed: bool = False
    duration_ms: int = 0
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    pids_limited: bool = False

    @property
    def ok(self):
        """True when the command exited 0 and was neither timed out nor killed by a signal."""
        return self.exit_code == 0 and not self.timed_out and not self.signal

    @classmethod
    def from_json(cls, o):
        out, err = o.get("stdout", ""), o.get("stderr", "")
        if o.get("encoding") == "base64":
            out = base64.b64decode(out).decode("utf-8", "replace")
            err = base64.b64decode(err).decode("utf-8", "replace")
        return cls(stdout=out, stderr=err, exit_code=o.get("exit_code", -1),
                   signal=o.get("signal", 0) or 0, timed_out=bool(o.get("timed_out")),
                   truncated=bool(o.get("truncated")), oom_killed=bool(o.get("oom_killed")),
                   duration_ms=o.get("duration_ms", 0),
                   stdout_truncated=bool(o.get("stdout_truncated")),
                   stderr_truncated=bool(o.get("stderr_truncated")),
                   pids_limited=bool(o.get("pids_limited")))


class _NoExitFields:
    """Seed B's exit attributes on events that carry no exit (output, error): see ExecEvent."""

    @property
    def exit_code(self):
        """None: only the exit event has an exit code (seed B's ExecEvent.exit_code)."""
        return None

    @property
    def timed_out(self):
        """False: only the exit event can say the command timed out."""
        return False

    @property
    def duration_ms(self):
        """None: only the exit event carries the run time."""
        return None


@dataclass
class OutputEvent(_NoExitFields):
    """A piece of output from Sandbox.exec_stream(): stream is "stdout" or "stderr", data is text
    (characters are never split across events)."""

    stream: str
    data: str

    @property
    def type(self):
        """"stdout" or "stderr" (the stream), as seed B's ExecEvent.type."""
        return self.stream


@dataclass
class ExitEvent:
    """The last event of a successful stream: how the command ended (fields as in ExecResult)."""

    exit_code: int
    signal: int = 0
    timed_out: bool = False
    truncated: bool = False
    oom_killed: bool = False
    duration_ms: int = 0
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    pids_limited: bool = False

    @property
    def ok(self):
        """True when the command exited 0 and was neither timed out nor killed by a signal."""
        return self.exit_code == 0 and not self.timed_out and not self.signal

    @property
    def type(self):
        """"exit", as seed B's ExecEvent.type."""
        return "exit"

    @property
    def data(self):
        """"": the exit event carries no output (seed B's ExecEvent.data)."""
        return ""


@dataclass
class ErrorEvent(_NoExitFields):
    """The last event of a failed stream (instead of ExitEvent): the server's error code and
    message, e.g. the sandbox was destroyed while the command ran."""

    code: str
    message: str

    @property
    def type(self):
        """"error" (seed B's streams have no such event; ours ends a failed stream with it)."""
        return "error"

    @property
    def data(self):
        """The message, so that code printing every event's data shows why it failed."""
        return self.message


@dataclass
class ExecEvent(metaclass=abc.ABCMeta):
    """Seed B's name for an event of Sandbox.exec_stream(): type ("stdout", "stderr", "exit"),
    data (output text; "" for exit), and for the exit event exit_code, timed_out and
    duration_ms (milliseconds); None / False on output events.

    exec_stream() yields OutputEvent, ExitEvent and ErrorEvent, which all are ExecEvents
    (isinstance(ev, ExecEvent) is True) and all answer these five attributes, so code written
    for either SDK reads the same stream. ExecEvent(...) itself can be built, e.g. in tests.
    """

    type: str
    data: str = ""
    exit_code: Optional[int] = None
    timed_out: bool = False
    duration_ms: Optional[int] = None


ExecEvent.register(OutputEvent)
ExecEvent.register(ExitEvent)
ExecEvent.register(ErrorEvent)


@dataclass
class FileInfo:
    """One entry of Sandbox.list_files() (the server's stat shape).

    name: last path component; path: absolute path inside the sandbox; type: "file", "dir",
    "symlink", "fifo", "socket", "char" or "block"; size in bytes; mode: permission bits (int,
    e.g. 0o644); uid, gid; mtime: RFC 3339 UTC text; link_target for symlinks, else None.
    """

    name: str
    path: str
    type: str
    size: int
    mode: int
    uid: int = 0
    gid: int = 0
    mtime: str = ""
    link_target: Optional[str] = None

    @property
    def is_dir(self):
        """True for a directory."""
        return self.type == "dir"

    @property
    def modified_at(self):
        """Seed B's name for mtime (RFC 3339 UTC text)."""
        return self.mtime

    @classmethod
    def from_json(cls, o):
        return cls(name=o["name"], path=o["path"], type=o["type"], size=o.get("size", 0),
                   mode=int(o.get("mode", "0"), 8), uid=o.get("uid", 0), gid=o.get("gid", 0),
                   mtime=o.get("mtime", ""), link_target=o.get("link_target"))


@dataclass
class FileEvent:
    """One change of a watched directory (iterating the FileWatch of Sandbox.watch_files()).

    type: "create" (made, or moved into the directory), "write" (contents changed; repeated
        writes of one path in a row come as one event), "remove", "rename" (moved away from
        path; where it went, if still watched, comes as a create), "chmod" (mode, owner or
        times changed), or "overflow" (events were lost because the reader fell behind).
    path: the entry, absolute in the sandbox ("/workspace/src/a.txt"); None for overflow.
    dir: True when the entry is a directory.
    dropped: overflow only: how many events were lost (0 when the number is unknown: the
        kernel's own queue overflowed, or a new directory could not be watched).
    """

    type: str
    path: Optional[str] = None
    dir: bool = False
    dropped: int = 0


@dataclass
class SnapshotInfo:
    """A snapshot of a sandbox's workspace.

    id ("snap_..."), sandbox_id it was taken from (None for imported ones), name (or None),
    template, size_bytes (archive size), content_bytes (files' total), created_at (RFC 3339).
    """

    id: str
    sandbox_id: Optional[str]
    name: Optional[str]
    template: str
    size_bytes: int = 0
    content_bytes: int = 0
    created_at: str = ""

    @property
    def image(self):
        """Seed B's name for template (the template the snapshot's sandbox ran)."""
        return self.template

    @classmethod
    def from_json(cls, o):
        return cls(id=o["id"], sandbox_id=o.get("sandbox_id"), name=o.get("name"),
                   template=o.get("template", ""), size_bytes=o.get("size_bytes", 0),
                   content_bytes=o.get("content_bytes", 0), created_at=o.get("created_at", ""))


@dataclass
class ForkResult:
    """One child of Sandbox.fork_running(): the new Sandbox, or the SandboxAPIError that kept
    it from being made (the other children are unaffected). memory: whether it started with
    the parent's memory (processes and RAM); False on every backend so far."""
    sandbox: Optional[object] = None
    error: Optional[Exception] = None
    memory: bool = False


@dataclass
class PreviewInfo:
    """A preview URL of one port of a sandbox (Sandbox.preview_url(); docs/adr/0015).

    url: what a browser opens, with no header; it holds the token (only from preview_url(),
        None in list_previews()). str(preview) is the url.
    token: "asbp_..." (only from preview_url()); opens this port of this sandbox, nothing
        else, until expires_at or revoke_preview().
    id ("pv_..."), sandbox_id, port, host ("<port>-sb-<hex>.<preview domain>"), created_by (the
    API key id that made it), created_at and expires_at (RFC 3339 UTC text).
    """

    id: str
    sandbox_id: str
    port: int
    host: str
    created_at: str = ""
    expires_at: str = ""
    created_by: str = ""
    url: Optional[str] = None
    token: Optional[str] = None

    def __str__(self):
        return self.url or ""

    @classmethod
    def from_json(cls, o):
        return cls(id=o["id"], sandbox_id=o["sandbox_id"], port=o["port"], host=o["host"],
                   created_at=o.get("created_at", ""), expires_at=o.get("expires_at", ""),
                   created_by=o.get("created_by", ""), url=o.get("url"), token=o.get("token"))


@dataclass
class SandboxInfo:
    """The server's view of a sandbox (GET /v1/sandboxes/{id}); times are RFC 3339 UTC text,
    cpus in cores, memory_mb and workspace_mb in MiB, timeouts in seconds. status is
    "creating", "running", "paused", "stopping", "destroyed" or "error"; while it is "paused",
    expires_at is when the paused sandbox is destroyed (the server's --paused-timeout-seconds
    after paused_at)."""

    id: str
    status: str
    template: str = ""
    image: str = ""  # seed B's name for template: the same value
    backend: str = ""  # the isolation it runs on: "ns" or "microvm"
    cpus: float = 0.0
    memory_mb: int = 0
    pids_limit: int = 0
    workspace_mb: int = 0
    network: bool = False
    read_only_rootfs: bool = True
    env_keys: List[str] = field(default_factory=list)
    default_workdir: str = "/workspace"  # cwd of commands that name none (template WORKDIR)
    default_user: str = "sandbox"  # user of commands that name none (template USER)
    created_at: str = ""
    expires_at: str = ""
    timeout_seconds: int = 0
    idle_timeout_seconds: int = 0
    # The snapshot its workspace came from last (a fork's, or the last rollback's, as seed B);
    # forked_from_snapshot_id is its origin only, last_rollback {"snapshot_id", "at"} or None.
    source_snapshot_id: Optional[str] = None
    forked_from_snapshot_id: Optional[str] = None
    last_rollback: Optional[Dict] = None
    owner: Optional[str] = None  # the key lineage that made it; only in an admin key's list()
    error_message: Optional[str] = None
    auto_pause: bool = False  # its TTL or idle timeout pauses it instead of destroying it
    # How auto_pause pauses: True keeps the memory (a freeze), False only the files.
    auto_pause_keep_memory: bool = True
    auto_resume: bool = False  # while paused, a request that needs it running resumes it
    allow_public_traffic: bool = False  # its ports answer on preview hosts without a token
    mask_request_host: Optional[str] = None  # Host header of requests to its ports (${PORT})
    paused_at: Optional[str] = None  # when it was paused; None unless status is "paused"
    # While paused: True when its memory was kept (resume continues where it stopped), False
    # when only its files were (resume starts it afresh); None unless status is "paused".
    paused_memory: Optional[bool] = None
    raw: Dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, o):
        known = {k: o[k] for k in cls.__dataclass_fields__ if k in o and k != "raw"}
        return cls(raw=dict(o), **known)


class FileWritten(dict):
    """The answer of Sandbox.write_file(): the server's JSON as a dict, {"path", "size", "mode",
    "name", "type", "modified_at"} (path absolute, size in bytes, mode octal text, modified_at
    RFC 3339 UTC), whose keys also read as attributes, as seed B's FileInfo: info.path."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


@dataclass
class TemplateInfo:
    """An installed template (GET /v1/templates): seed A's manifest fields plus ours.

    name, display_name, description, version, base (what it was built from), tools (commands it
    promises), packages (Debian packages), env (every command's environment), resources (the
    defaults a create gets: {"cpus", "memory_mb", "workspace_mb"}), created_at (RFC 3339, or
    None for an older template), size_bytes.
    """

    name: str
    display_name: str = ""
    description: str = ""
    version: str = ""
    base: str = ""
    tools: List[str] = field(default_factory=list)
    packages: List[str] = field(default_factory=list)
    env: Dict[str, str] = field(default_factory=dict)
    resources: Dict = field(default_factory=dict)
    created_at: Optional[str] = None
    size_bytes: int = 0
    default_workdir: str = "/workspace"  # its sandboxes' commands' default cwd (WORKDIR)
    default_user: str = "sandbox"  # and user (USER)

    @classmethod
    def from_json(cls, o):
        return cls(name=o["name"], display_name=o.get("display_name", ""),
                   description=o.get("description", ""), version=o.get("version", ""),
                   base=o.get("base", ""), tools=list(o.get("tools", [])),
                   packages=list(o.get("packages", [])), env=dict(o.get("env", {})),
                   resources=dict(o.get("resources", {})), created_at=o.get("created_at"),
                   size_bytes=o.get("size_bytes", 0),
                   default_workdir=o.get("default_workdir", "/workspace"),
                   default_user=o.get("default_user", "sandbox"))


@dataclass
class ProcessInfo:
    """A background process (ADR 0011; GET /v1/sandboxes/{id}/processes/{pid}).

    pid (in the sandbox), tag, argv (as started; empty when command was given), command (the
    shell string, or None), state ("running" or "exited"), exit_code (None while running; the
    status or 128+signal), signal, started_at / ended_at (RFC 3339 UTC; ended_at None while
    running), pty, stdin_open, output_bytes (bytes written so far, both streams).
    """

    pid: int
    state: str
    tag: str = ""
    argv: List[str] = field(default_factory=list)
    command: Optional[str] = None
    exit_code: Optional[int] = None
    signal: int = 0
    started_at: str = ""
    ended_at: Optional[str] = None
    pty: bool = False
    stdin_open: bool = False
    output_bytes: int = 0

    @classmethod
    def from_json(cls, o):
        return cls(**{k: o[k] for k in cls.__dataclass_fields__ if k in o})


@dataclass
class SkippedEvent:
    """A process stream fell behind its replay ring: `bytes` of output were lost to it."""

    bytes: int


# ---- code interpreter (ADR 0019; POST /v1/sandboxes/{id}/contexts, /code, /code/stream) -------

@dataclass
class Context:
    """A code context: a long-lived kernel whose state (variables, imports, cwd) persists
    between Sandbox.run_code(code, context=ctx) calls.

    id ("ctx_" + 16 hex), language ("python", "javascript" or "bash"), cwd (where it started),
    pid (the kernel's pid in the sandbox), state ("running" or "dead"), default (True for the
    per-language context used when run_code names no context), created_at (RFC 3339 UTC).
    """

    id: str
    language: str = "python"
    cwd: str = "/workspace"
    pid: int = 0
    state: str = "running"
    default: bool = False
    created_at: str = ""

    @classmethod
    def from_json(cls, o):
        return cls(**{k: o[k] for k in cls.__dataclass_fields__ if k in o})


# Result's attributes -> the MIME type each reads.
_RESULT_MIMES = {
    "text": "text/plain", "html": "text/html", "markdown": "text/markdown",
    "svg": "image/svg+xml", "png": "image/png", "jpeg": "image/jpeg", "latex": "text/latex",
    "json": "application/json", "javascript": "application/javascript",
    "pdf": "application/pdf",
}
_BINARY_MIMES = ("image/png", "image/jpeg", "application/pdf")


class Result:
    """One rich result of an execution: the value of the last expression (is_main_result) or
    something display()ed or plotted. Every MIME type the kernel sent is in `data`
    ({mime: value}, as the server sent it); the attributes read them decoded:

      text (text/plain), html, markdown, svg, latex, javascript: str or None
      png, jpeg, pdf: bytes (decoded from the server's base64) or None
      json: the application/json value (dict/list/...) or None
      chart: the chart data extracted from a matplotlib figure (a dict with "type" such as
        "line", "bar", "scatter", "pie", plus "title", "x_label", "y_label", "elements"), or None
      is_main_result: True for the value of the code's last expression
    formats() lists the attribute names present (e.g. ["text", "png"]).
    """

    def __init__(self, data=None, is_main_result=False, chart=None, raw=None):
        self.data = dict(data or {})
        self.is_main_result = bool(is_main_result)
        self.chart = chart
        self.raw = raw if raw is not None else {"data": self.data,
                                                "is_main_result": self.is_main_result}

    @classmethod
    def from_json(cls, o):
        return cls(o.get("data") or {}, o.get("is_main_result", False), o.get("chart"), o)

    def _get(self, mime):
        v = self.data.get(mime)
        if v is not None and mime in _BINARY_MIMES and isinstance(v, str):
            return base64.b64decode(v)
        return v

    text = property(lambda self: self._get("text/plain"), doc="text/plain (str) or None")
    html = property(lambda self: self._get("text/html"), doc="text/html (str) or None")
    markdown = property(lambda self: self._get("text/markdown"), doc="text/markdown or None")
    svg = property(lambda self: self._get("image/svg+xml"), doc="image/svg+xml (str) or None")
    png = property(lambda self: self._get("image/png"), doc="image/png decoded to bytes, or None")
    jpeg = property(lambda self: self._get("image/jpeg"), doc="image/jpeg as bytes, or None")
    pdf = property(lambda self: self._get("application/pdf"), doc="application/pdf as bytes")
    latex = property(lambda self: self._get("text/latex"), doc="text/latex (str) or None")
    json = property(lambda self: self._get("application/json"),
                    doc="application/json (the decoded value) or None")
    javascript = property(lambda self: self._get("application/javascript"),
                          doc="application/javascript (str) or None")

    def formats(self):
        """The attribute names of the MIME types present, plus "chart" when there is one
        (e.g. ["text", "png", "chart"])."""
        names = [n for n, m in _RESULT_MIMES.items() if m in self.data]
        if self.chart is not None:
            names.append("chart")
        return names

    def __repr__(self):
        return "Result(formats=%r, is_main_result=%r)" % (self.formats(), self.is_main_result)


@dataclass
class ExecutionError:
    """An exception the code raised (or the kernel's own: "KernelDied", "KeyboardInterrupt" on a
    timeout or interrupt): name ("ValueError"), value ("bad input"), traceback (list of lines,
    no terminal colour codes)."""

    name: str
    value: str = ""
    traceback: List[str] = field(default_factory=list)

    @classmethod
    def from_json(cls, o):
        return cls(name=o.get("name", ""), value=o.get("value", ""),
                   traceback=list(o.get("traceback") or []))

    def __str__(self):
        return "%s: %s" % (self.name, self.value) if self.value else self.name


@dataclass
class Execution:
    """The outcome of Sandbox.run_code(code, context=...) in a code context.

    results: list of Result (display()ed values, figures, and the main result last);
    stdout, stderr: the printed text; error: ExecutionError or None;
    status: "ok", "error", "timeout" or "dead" (the kernel exited; restart the context);
    execution_count: the kernel's counter (None for bash); duration_ms; timed_out;
    truncated (output went past max_output_bytes, which stdout, stderr and results share);
    truncated_outputs (which lost something: a sorted subset of "results", "stderr", "stdout");
    dropped_results (results left out whole); exit_code (bash only, else None);
    context_id, language: the context that ran it.
    `text` is the main result's text/plain (None when the code ended in a statement), `ok` is
    status == "ok", and `logs` is {"stdout": [...], "stderr": [...]} of the pieces as they came.
    """

    results: List[Result] = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""
    error: Optional[ExecutionError] = None
    status: str = "ok"
    execution_count: Optional[int] = None
    duration_ms: int = 0
    timed_out: bool = False
    truncated: bool = False
    truncated_outputs: List[str] = field(default_factory=list)
    dropped_results: int = 0
    exit_code: Optional[int] = None
    context_id: str = ""
    language: str = ""
    logs: Dict[str, List[str]] = field(default_factory=lambda: {"stdout": [], "stderr": []})

    @property
    def ok(self):
        """True when the code ran to the end without an error, timeout or kernel death."""
        return self.status == "ok"

    @property
    def text(self):
        """The main result's text/plain, or None."""
        for r in self.results:
            if r.is_main_result:
                return r.text
        return None

    @property
    def main_result(self):
        """The Result of the last expression, or None."""
        for r in self.results:
            if r.is_main_result:
                return r
        return None

    @classmethod
    def from_json(cls, o):
        out, err = o.get("stdout", ""), o.get("stderr", "")
        return cls(results=[Result.from_json(r) for r in o.get("results") or []],
                   stdout=out, stderr=err,
                   error=ExecutionError.from_json(o["error"]) if o.get("error") else None,
                   status=o.get("status", "ok"), execution_count=o.get("execution_count"),
                   duration_ms=o.get("duration_ms", 0), timed_out=bool(o.get("timed_out")),
                   truncated=bool(o.get("truncated")),
                   truncated_outputs=list(o.get("truncated_outputs") or []),
                   dropped_results=int(o.get("dropped_results") or 0), exit_code=o.get("exit_code"),
                   context_id=o.get("context_id", ""), language=o.get("language", ""),
                   logs={"stdout": [out] if out else [], "stderr": [err] if err else []})
