"""The Sandbox handle: commands, files, snapshots and lifetime of one sandbox."""

import base64
import io
import json
import os
import posixpath
import tarfile
import http.client

from . import watch as _watch
from .errors import NotFoundError, SandboxAPIError, SandboxConnectionError
from .types import Context, ErrorEvent, ExecResult, Execution, ExecutionError, ExitEvent, \
    FileInfo, FileWritten, ForkResult, OutputEvent, PreviewInfo, ProcessInfo, Result, \
    SandboxInfo, SkippedEvent, SnapshotInfo

# run_code(language) -> the interpreter that reads the program from stdin.
_GO_RUN = ["sh", "-c", 'd=$(mktemp -d) && cat > "$d/main.go" && cd "$d" && go run main.go']
_LANGUAGES = {
    "python": ["python3", "-"], "python3": ["python3", "-"], "py": ["python3", "-"],
    "javascript": ["node", "-"], "js": ["node", "-"], "node": ["node", "-"],
    "typescript": None,
    "go": _GO_RUN, "golang": _GO_RUN,
    "sh": ["sh", "-s"], "shell": ["sh", "-s"], "bash": ["bash", "-s"],
}

# The language run_code uses when none is given, as seed A's runCode does: by the template's
# name, else by the first of these tools the template lists, else python.
_TEMPLATE_LANGUAGE = {"python": "python", "node": "javascript", "go": "go"}
_TOOL_LANGUAGE = (("python3", "python"), ("node", "javascript"), ("go", "go"))


def default_language(template_name, tools):
    """The run_code language of a template: by name (python, node, go), else by its tools."""
    if template_name in _TEMPLATE_LANGUAGE:
        return _TEMPLATE_LANGUAGE[template_name]
    for tool, language in _TOOL_LANGUAGE:
        if tool in (tools or []):
            return language
    return "python"


def _mode_text(mode):
    """0o755 or "755"/"0755" -> "755" (the server's octal text); None stays None."""
    if mode is None:
        return None
    if isinstance(mode, int):
        return "%o" % mode
    return str(mode)


def _timeout(timeout, timeout_seconds):
    """One timeout from exec's two names (timeout_seconds is seed B's); both with different
    values is a ValueError, as the server answers 400 for the same in a request body."""
    if timeout is not None and timeout_seconds is not None and timeout != timeout_seconds:
        raise ValueError("timeout=%r and timeout_seconds=%r: both given with different values "
                         "(they are aliases)" % (timeout, timeout_seconds))
    return timeout if timeout is not None else timeout_seconds


def _exec_body(command, env, workdir, timeout, stdin, max_output_bytes, user):
    body = {}
    if isinstance(command, str):
        body["command"] = command
    else:
        body["argv"] = list(command)
    if env:
        body["env"] = dict(env)
    if workdir is not None:
        body["workdir"] = workdir
    if timeout is not None:
        body["timeout"] = timeout
    if stdin is not None:
        body["stdin"] = stdin.decode() if isinstance(stdin, bytes) else stdin
    if max_output_bytes is not None:
        body["max_output_bytes"] = max_output_bytes
    if user is not None:
        body["user"] = user
    return body


class Sandbox:
    """A handle on one sandbox of a SandboxClient. Obtain it from client.create(), client.get(),
    client.list() or client.fork(); it holds the id and the last SandboxInfo seen (`info`).

    As a context manager it destroys the sandbox on exit, tolerating one that is already gone:

        with client.create() as sb:
            print(sb.exec("echo hi").stdout)

    Every field of SandboxInfo also reads on the handle itself (sb.cpus is sb.info.cpus), and
    seed B's attributes are here: status, image, expires_at, data (the server's JSON).
    """

    def __init__(self, client, info):
        self._client = client
        self._t = client._transport
        self.info = info if isinstance(info, SandboxInfo) else SandboxInfo.from_json(info)

    @property
    def id(self):
        """The sandbox id, "sb_" + 16 hex digits."""
        return self.info.id

    @property
    def status(self):
        """The status last seen: "running", "paused", "creating", "stopping", "error", ...
        (refresh())."""
        return self.info.status

    @property
    def image(self):
        """Seed B's name for the template the sandbox runs (e.g. "base")."""
        return self.info.template

    @property
    def expires_at(self):
        """When the TTL ends, RFC 3339 UTC text, as last seen (set_timeout() and resume() move
        it; while paused, when the paused sandbox is destroyed)."""
        return self.info.expires_at

    @property
    def data(self):
        """The server's JSON of the sandbox as last seen (a dict; seed B's Sandbox.data)."""
        return self.info.raw

    def __getattr__(self, name):
        # Called only for names the handle lacks: SandboxInfo's fields (cpus, template, ...),
        # so that rollback(), set_timeout() and refresh(), which return the handle as seed B's
        # do, still answer what they answered when they returned a SandboxInfo.
        info = self.__dict__.get("info")
        if info is not None and name in SandboxInfo.__dataclass_fields__:
            return getattr(info, name)
        raise AttributeError("%r object has no attribute %r" % (type(self).__name__, name))

    def __repr__(self):
        return "Sandbox(id=%r, image=%r, status=%r)" % (self.id, self.image, self.status)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy(missing_ok=True)
        return False

    def _path(self, tail=""):
        return "/v1/sandboxes/" + self.id + tail

    def refresh(self):
        """Re-reads the sandbox from the server into info; returns this handle (which answers
        every SandboxInfo field, as sb.refresh().status). Raises NotFoundError when it no
        longer exists."""
        self.info = SandboxInfo.from_json(self._t.json("GET", self._path()))
        return self

    # ---- commands -----------------------------------------------------------------------

    def exec(self, command, env=None, workdir=None, timeout=None, stdin=None,
             max_output_bytes=None, user=None, timeout_seconds=None):
        """Runs a command to completion (POST /v1/sandboxes/{id}/exec).

        command: a str run by /bin/sh -c, or a list of str run as argv (never shell-expanded).
        env: dict of extra environment variables; workdir: directory (relative ones are under
        /workspace; default the sandbox's default_workdir, its template's WORKDIR or /workspace);
        timeout: seconds (float) after which the command is killed (the result then has
        timed_out True); timeout_seconds: seed B's name for timeout (both with different
        values: ValueError); stdin: str or bytes fed to the command; max_output_bytes: cap on
        the bytes kept of each stream (stdout and stderr separately); user: "sandbox" or
        "root" (default the sandbox's default_user, its template's USER or "sandbox").
        Returns ExecResult (check .ok). A non-zero exit is not an exception.
        Raises SandboxAPIError (400 bad request, 404 no such sandbox), SandboxConnectionError.
        """
        timeout = _timeout(timeout, timeout_seconds)
        body = _exec_body(command, env, workdir, timeout, stdin, max_output_bytes, user)
        # The answer comes when the command ends: wait at least its own timeout.
        wait = self._t.timeout if timeout is None else max(self._t.timeout, timeout + 30)
        return ExecResult.from_json(self._t.json("POST", self._path("/exec"), json_body=body,
                                                 timeout=wait))

    def exec_stream(self, command, env=None, workdir=None, timeout=None, stdin=None,
                    max_output_bytes=None, user=None, timeout_seconds=None):
        """Runs a command and yields its events as they come
        (POST /v1/sandboxes/{id}/exec/stream, NDJSON).

        Arguments as for exec() (timeout_seconds included). Yields OutputEvent(stream
        "stdout"/"stderr", data) in the order written, then exactly one ExitEvent, or an
        ErrorEvent when the command failed after the stream began (e.g. the sandbox was
        destroyed). Each is an ExecEvent with seed B's type, data, exit_code, timed_out and
        duration_ms. Keepalives are skipped.
        Closing the generator early closes the connection, which cancels the command.
        Raises SandboxAPIError for errors found before the stream starts (404, 400), and
        SandboxConnectionError if the stream breaks without a final event.
        """
        timeout = _timeout(timeout, timeout_seconds)
        body = _exec_body(command, env, workdir, timeout, stdin, max_output_bytes, user)
        conn, resp = self._t.open("POST", self._path("/exec/stream"), json_body=body,
                                  headers={"Accept": "application/x-ndjson"})
        finished = False
        try:
            while True:
                try:
                    line = resp.readline()
                except (OSError, http.client.HTTPException) as e:
                    raise SandboxConnectionError("exec stream of %s broke: %s" % (self.id, e))
                if not line:
                    break
                line = line.strip()
                if not line:
                    continue
                ev = json.loads(line)
                kind = ev.get("type")
                if kind in ("stdout", "stderr"):
                    yield OutputEvent(kind, ev.get("data", ""))
                elif kind == "exit":
                    finished = True
                    yield ExitEvent(exit_code=ev.get("exit_code", -1),
                                    signal=ev.get("signal", 0) or 0,
                                    timed_out=bool(ev.get("timed_out")),
                                    truncated=bool(ev.get("truncated")),
                                    oom_killed=bool(ev.get("oom_killed")),
                                    duration_ms=ev.get("duration_ms", 0),
                                    stdout_truncated=bool(ev.get("stdout_truncated")),
                                    stderr_truncated=bool(ev.get("stderr_truncated")),
                                    pids_limited=bool(ev.get("pids_limited")))
                    return
                elif kind == "error":
                    finished = True
                    yield ErrorEvent(ev.get("code", "internal"), ev.get("message", ""))
                    return
                # "keepalive" and unknown types are skipped.
            if not finished:
                raise SandboxConnectionError("exec stream of %s ended without an exit event"
                                             % self.id)
        finally:
            conn.close()

    # ---- background processes (ADR 0011) -------------------------------------------------

    def start_process(self, command, env=None, workdir=None, user=None, tag=None, stdin=False,
                      pty=False, cols=None, rows=None, ring_bytes=None):
        """Starts a background process (POST /v1/sandboxes/{id}/processes) and returns its
        ProcessInfo as soon as it runs. It outlives this call and this client; destroying the
        sandbox ends it.

        command: str (run by /bin/sh -c) or list of str (argv); env, workdir, user as for
        exec(); tag: a label (at most 256 bytes); stdin: give it a stdin pipe (write_stdin);
        pty: run it on a pseudo-terminal of cols x rows (default 80x24, each 1..10000);
        ring_bytes: recent output kept for replay (default 256 KiB, at most 4 MiB).
        Raises SandboxAPIError (400 bad request, 404 no sandbox or missing workdir, 429 more
        than 256 running).
        """
        body = {}
        if isinstance(command, str):
            body["command"] = command
        else:
            body["argv"] = list(command)
        for key, value in (("env", env), ("workdir", workdir), ("user", user), ("tag", tag),
                           ("cols", cols), ("rows", rows), ("ring_bytes", ring_bytes)):
            if value is not None:
                body[key] = value
        if stdin:
            body["stdin"] = True
        if pty:
            body["pty"] = True
        return ProcessInfo.from_json(self._t.json("POST", self._path("/processes"),
                                                  json_body=body))

    def list_processes(self):
        """Running and recently exited (the 64 most recent) background processes, as a list
        of ProcessInfo in start order (GET /v1/sandboxes/{id}/processes)."""
        data = self._t.json("GET", self._path("/processes"))
        return [ProcessInfo.from_json(p) for p in data["processes"]]

    def get_process(self, pid):
        """One background process as ProcessInfo. Raises NotFoundError for an unknown pid."""
        return ProcessInfo.from_json(self._t.json("GET", self._path("/processes/%d" % pid)))

    def stream_process(self, pid, replay_bytes=0):
        """Follows a background process's output (GET .../processes/{pid}/stream, NDJSON).

        replay_bytes: first replay up to this many bytes of recent output (at most 4 MiB).
        Yields OutputEvent(stream, data) as the process writes, SkippedEvent(bytes) when this
        reader fell behind the replay ring, then one ExitEvent (exit_code, signal) when the
        process ends, or an ErrorEvent. Keepalives are skipped; there is no idle limit.
        Closing the generator detaches; the process keeps running.
        """
        conn, resp = self._t.open("GET", self._path("/processes/%d/stream" % pid),
                                  query={"replay_bytes": str(replay_bytes)},
                                  headers={"Accept": "application/x-ndjson"}, timeout=None)
        try:
            while True:
                try:
                    line = resp.readline()
                except (OSError, http.client.HTTPException) as e:
                    raise SandboxConnectionError("process stream broke: %s" % e)
                if not line:
                    raise SandboxConnectionError("process stream ended without an exit event")
                line = line.strip()
                if not line:
                    continue
                ev = json.loads(line)
                kind = ev.get("type")
                if kind in ("stdout", "stderr"):
                    yield OutputEvent(kind, ev.get("data", ""))
                elif kind == "skipped":
                    yield SkippedEvent(ev.get("bytes", 0))
                elif kind == "exit":
                    yield ExitEvent(exit_code=ev.get("exit_code", -1),
                                    signal=ev.get("signal", 0) or 0, timed_out=False,
                                    truncated=False, oom_killed=False, duration_ms=0)
                    return
                elif kind == "error":
                    yield ErrorEvent(ev.get("code", "internal"), ev.get("message", ""))
                    return
        finally:
            conn.close()

    def write_stdin(self, pid, data):
        """Writes str or bytes to a background process's stdin; returns the bytes accepted.
        Raises SandboxAPIError 409 (no open stdin), 429 (over 1 MiB waiting unread)."""
        if isinstance(data, str):
            body = {"data": data}
        else:
            body = {"data": base64.b64encode(data).decode(), "encoding": "base64"}
        return self._t.json("POST", self._path("/processes/%d/stdin" % pid),
                            json_body=body)["bytes"]

    def close_stdin(self, pid):
        """Sends EOF to a background process's stdin (^D on a PTY)."""
        self._t.request("POST", self._path("/processes/%d/close-stdin" % pid))

    def signal_process(self, pid, signal="SIGTERM"):
        """Sends a signal (a name such as "SIGINT" or a number as str) to the process group."""
        self._t.request("POST", self._path("/processes/%d/signal" % pid),
                        json_body={"signal": str(signal)})

    def resize_process(self, pid, cols, rows):
        """Resizes a background process's PTY (cols and rows each 1..10000)."""
        self._t.request("POST", self._path("/processes/%d/resize" % pid),
                        json_body={"cols": cols, "rows": rows})

    def kill_process(self, pid):
        """Kills a background process and its whole tree; returns its final ProcessInfo."""
        return ProcessInfo.from_json(self._t.json("DELETE", self._path("/processes/%d" % pid)))

    def run_code(self, code, language=None, timeout=None, env=None, context=None,
                 on_stdout=None, on_stderr=None, on_result=None, on_error=None,
                 max_output_bytes=None):
        """Runs code, in one of two ways.

        One-shot (seed A's runCode; neither `context` nor any on_* callback given): a fresh
        interpreter reads the program from stdin and exits. language: "python"/"python3"/"py"
        (python3), "javascript"/"js"/"node" (node), "go"/"golang" (go run), "sh"/"shell" (sh),
        "bash". None picks the interpreter from the sandbox's template: python -> python,
        node -> javascript, go -> go, else by the template's tools (GET /v1/templates/{name}),
        else python. timeout: seconds; env: dict. Returns ExecResult. Raises ValueError for an
        unknown language; otherwise as exec().

        Code interpreter (`context` given, or any on_* callback): the code runs in a stateful
        kernel (POST /v1/sandboxes/{id}/code) whose variables persist between calls, and
        returns an Execution (results with every MIME type, charts, error, ...); the same as
        execute_code(), see there for the arguments (`env` holds for that one run).
        """
        if context is not None or on_stdout or on_stderr or on_result or on_error:
            return self.execute_code(code, language=language, context=context, timeout=timeout,
                                     on_stdout=on_stdout, on_stderr=on_stderr,
                                     on_result=on_result, on_error=on_error,
                                     max_output_bytes=max_output_bytes, env=env)
        if max_output_bytes is not None:
            raise ValueError("run_code: max_output_bytes needs a context (or use exec())")
        if language is None:
            language = self.default_language()
        argv = _LANGUAGES.get(language.lower())
        if argv is None:
            raise ValueError("run_code: unsupported language %r (use one of %s)"
                             % (language, ", ".join(k for k, v in _LANGUAGES.items() if v)))
        return self.exec(argv, stdin=code, timeout=timeout, env=env)

    # ---- code interpreter (ADR 0019) ------------------------------------------------------

    def execute_code(self, code, language=None, context=None, timeout=None, on_stdout=None,
                     on_stderr=None, on_result=None, on_error=None, max_output_bytes=None,
                     env=None):
        """Runs code in a stateful code context (POST /v1/sandboxes/{id}/code); always the code
        interpreter, even without a context (then the sandbox's default context of `language`,
        created on first use, runs it).

        code: the source text (at most 512 KiB). language: "python", "javascript" or "bash"
        (Python needs the `python` template, JavaScript the `node` one); None: the context's
        language, or python. context: a Context or its id. timeout: seconds; on expiry the code
        is interrupted (status "timeout", timed_out True) and the context survives.
        max_output_bytes: cap on stdout+stderr+results kept (default and maximum 1 MiB; a result
        that does not fit is left out, see Execution.truncated_outputs). env: dict of environment
        variables for this run only, put back after it (os.environ in Python,
        process.env in JavaScript, exported variables in bash, which takes shell names only; at
        most 64 KiB of keys and values, else SandboxAPIError 400).
        on_stdout(str), on_stderr(str), on_result(Result), on_error(ExecutionError): called as
        the events arrive; with any of them the NDJSON route /code/stream is used.
        Returns Execution (an error in the code is Execution.error, not an exception).
        Raises NotFoundError (no such sandbox or context), SandboxAPIError 400 (bad language,
        code too long), 409 (the context is busy or dead, or the template lacks the
        interpreter), SandboxConnectionError.
        """
        body = {"code": code}
        if context is not None:
            body["context_id"] = _context_id(context)
        if language is not None:
            body["language"] = language
        if timeout is not None:
            body["timeout"] = timeout
        if max_output_bytes is not None:
            body["max_output_bytes"] = int(max_output_bytes)
        if env:
            body["env"] = dict(env)
        # The answer comes when the code ends: wait at least its own timeout.
        wait = self._t.timeout if timeout is None else max(self._t.timeout, timeout + 60)
        if not (on_stdout or on_stderr or on_result or on_error):
            return Execution.from_json(self._t.json("POST", self._path("/code"), json_body=body,
                                                    timeout=wait))
        return self._code_stream(body, wait, on_stdout, on_stderr, on_result, on_error)

    def _code_stream(self, body, wait, on_stdout, on_stderr, on_result, on_error):
        conn, resp = self._t.open("POST", self._path("/code/stream"), json_body=body,
                                  headers={"Accept": "application/x-ndjson"}, timeout=wait)
        ex = Execution()
        out, err = [], []
        try:
            while True:
                try:
                    line = resp.readline()
                except (OSError, http.client.HTTPException) as e:
                    raise SandboxConnectionError("code stream broke: %s" % e) from e
                if not line:
                    raise SandboxConnectionError("code stream ended without an end event")
                line = line.strip()
                if not line:
                    continue
                ev = json.loads(line)
                kind = ev.get("type")
                if kind == "context":
                    ex.context_id = ev.get("context_id", "")
                    ex.language = ev.get("language", "")
                elif kind in ("stdout", "stderr"):
                    data = ev.get("data", "")
                    (out if kind == "stdout" else err).append(data)
                    cb = on_stdout if kind == "stdout" else on_stderr
                    if cb:
                        cb(data)
                elif kind == "result":
                    r = Result.from_json(ev)
                    ex.results.append(r)
                    if on_result:
                        on_result(r)
                elif kind == "error" and "code" in ev:  # the stream itself failed
                    raise SandboxAPIError(resp.status, ev.get("code", "internal"),
                                          ev.get("message", ""),
                                          resp.getheader("X-Request-Id"))
                elif kind == "error":
                    ex.error = ExecutionError.from_json(ev)
                    if on_error:
                        on_error(ex.error)
                elif kind == "end":
                    ex.status = ev.get("status", "ok")
                    ex.execution_count = ev.get("execution_count")
                    ex.duration_ms = ev.get("duration_ms", 0)
                    ex.timed_out = bool(ev.get("timed_out"))
                    ex.truncated = bool(ev.get("truncated"))
                    ex.truncated_outputs = list(ev.get("truncated_outputs") or [])
                    ex.dropped_results = int(ev.get("dropped_results") or 0)
                    ex.exit_code = ev.get("exit_code")
                    break
        finally:
            conn.close()
        ex.stdout, ex.stderr = "".join(out), "".join(err)
        ex.logs = {"stdout": out, "stderr": err}
        return ex

    def create_code_context(self, language="python", cwd=None):
        """Starts a new code context, a kernel of its own (POST /v1/sandboxes/{id}/contexts).
        language: "python", "javascript" or "bash"; cwd: its starting directory (default
        /workspace). Returns Context. Raises SandboxAPIError 400 (unknown language, missing
        cwd), 409 (the template lacks the interpreter, or the sandbox is not running),
        NotFoundError."""
        body = {"language": language}
        if cwd is not None:
            body["cwd"] = cwd
        return Context.from_json(self._t.json("POST", self._path("/contexts"), json_body=body,
                                              timeout=max(self._t.timeout, 120)))

    def list_code_contexts(self):
        """The sandbox's code contexts (GET .../contexts), the default ones included; a list of
        Context. Raises NotFoundError (no such sandbox)."""
        o = self._t.json("GET", self._path("/contexts"))
        return [Context.from_json(c) for c in o.get("contexts", [])]

    def get_code_context(self, context):
        """One code context (GET .../contexts/{cid}); its state says "dead" once the kernel
        exited. context: a Context or its id. Returns Context. Raises NotFoundError."""
        return Context.from_json(self._t.json("GET", self._path("/contexts/" +
                                                                _context_id(context))))

    def delete_code_context(self, context):
        """Stops a code context's kernel and forgets it (DELETE .../contexts/{cid}).
        context: a Context or its id. Raises NotFoundError."""
        self._t.request("DELETE", self._path("/contexts/" + _context_id(context)))

    def restart_code_context(self, context):
        """Replaces a context's kernel with a fresh one (same id, state lost; also revives a
        dead one) (POST .../contexts/{cid}/restart). Returns the new Context.
        Raises NotFoundError, SandboxAPIError 409."""
        return Context.from_json(self._t.json(
            "POST", self._path("/contexts/%s/restart" % _context_id(context)),
            timeout=max(self._t.timeout, 120)))

    def interrupt_code_context(self, context):
        """Interrupts the code running in a context (KeyboardInterrupt in Python); the context
        and its state survive (POST .../contexts/{cid}/interrupt). Raises NotFoundError."""
        self._t.request("POST", self._path("/contexts/%s/interrupt" % _context_id(context)))

    def default_language(self):
        """The language run_code(code) uses for this sandbox's template (see run_code)."""
        if getattr(self, "_language", None) is None:
            name = self.info.template
            tools = []
            if name not in _TEMPLATE_LANGUAGE:
                try:
                    tools = self._t.json("GET", "/v1/templates/" + name).get("tools", [])
                except Exception:  # an older server without /v1/templates: by name only
                    tools = []
            self._language = default_language(name, tools)
        return self._language

    # ---- files --------------------------------------------------------------------------

    def read_file(self, path):
        """Returns the bytes of a file (GET /v1/sandboxes/{id}/files?path=). Relative paths
        are under /workspace; absolute ones may name any file the sandbox user may read
        ("/etc/os-release"). Raises NotFoundError (missing), SandboxAPIError 400 (a directory,
        a relative path climbing out of /workspace), 403 (not readable by the sandbox user)."""
        return self._t.request("GET", self._path("/files"), query={"path": path})[1]

    def read_text(self, path, encoding="utf-8"):
        """read_file() decoded as text (encoding, default UTF-8; errors raise UnicodeError)."""
        return self.read_file(path).decode(encoding)

    def write_file(self, path, data, mode=None):
        """Writes a whole file, creating parent directories (PUT /v1/sandboxes/{id}/files).

        data: bytes (written as is) or str (written as UTF-8). mode: permission bits as an int
        (0o755) or octal text ("755"); default 0644. Returns the server's answer as a
        FileWritten, a dict {"path", "size", "mode", "name", "type", "modified_at"} whose keys
        also read as attributes (info.path, as seed B's FileInfo). Relative paths are under
        /workspace; absolute ones anywhere the sandbox user may write ("/tmp/x"). Raises
        SandboxAPIError 400 (a relative path climbing out of /workspace, bad mode), 403 (not
        writable by the sandbox user: the read-only root file system, root's directories), 413
        (over the server's file limit), NotFoundError.
        """
        if isinstance(data, str):
            data = data.encode("utf-8")
        return FileWritten(self._t.json("PUT", self._path("/files"),
                                        query={"path": path, "mode": _mode_text(mode)},
                                        body=bytes(data)))

    def list_files(self, path="/workspace", recursive=False):
        """Lists a directory (GET /v1/sandboxes/{id}/files/list), sorted by name, dotfiles
        included; recursive lists the whole tree. Returns a list of FileInfo.
        Raises NotFoundError (missing), SandboxAPIError 400 (not a directory)."""
        o = self._t.json("GET", self._path("/files/list"),
                         query={"path": path, "recursive": "true" if recursive else None})
        return [FileInfo.from_json(e) for e in o.get("entries", [])]

    def watch_files(self, path="/workspace", recursive=False, max_queue=None):
        """Watches a directory for changes (GET /v1/sandboxes/{id}/files/watch, NDJSON) and
        returns a FileWatch once the watch is armed: every change after watch_files() returns
        is reported, so make the changes you want to see after it.

        path: the directory (relative paths are under /workspace, absolute ones anywhere the
        sandbox user may read; default /workspace).
        recursive: also watch every directory below it, and those made or moved in later.
        max_queue: events the sandbox holds for a reader that falls behind (1..65536, default
        4096); beyond that newer ones are dropped and reported as one "overflow" FileEvent.
        The FileWatch is an iterator of FileEvent(type, path, dir, dropped): type "create",
        "write", "remove", "rename", "chmod" or "overflow", path absolute in the sandbox. It
        has path (the watched directory, absolute), watches (directories followed),
        next_event(timeout) (None when nothing came in time), close() (ends the watch in the
        sandbox) and is a context manager. Iteration stops when the directory is removed
        (end_reason "removed") or after close().
        Raises NotFoundError (no such sandbox or directory), SandboxAPIError 400 (not a
        directory, a relative path out of /workspace, max_queue out of range), 403, 429 (8 watches already run
        in this sandbox, or a recursive watch of more than 8192 directories),
        SandboxConnectionError; iterating raises SandboxAPIError when the watch fails later
        (e.g. "backend_error": the sandbox was destroyed).
        """
        query = {"path": path, "recursive": "true" if recursive else None,
                 "max_queue": None if max_queue is None else str(int(max_queue))}
        conn, resp = self._t.open("GET", self._path("/files/watch"), query=query,
                                  headers={"Accept": "application/x-ndjson"})
        what = "file watch of %s in %s" % (path, self.id)
        try:
            first = _watch.read_line(resp, what)
            if first is not None and first.get("type") == "error":
                raise _watch.stream_error(first.get("code", "internal"),
                                          first.get("message", ""),
                                          resp.getheader("X-Request-Id"))
            if first is None or first.get("type") != "start":
                raise SandboxConnectionError("%s: expected the start line, got %r"
                                             % (what, first))
        except BaseException:
            conn.close()
            raise
        timeout = self._t.timeout
        read_timeout = None if timeout is None else max(timeout, _watch.MIN_READ_TIMEOUT)
        return _watch.FileWatch(self.id, conn, resp, first, read_timeout)

    def upload_dir(self, local_dir, remote_dir="/workspace"):
        """Copies a local directory's contents into remote_dir (created if missing) as one tar
        (PUT /v1/sandboxes/{id}/archive?path=). Regular files, directories and symlinks are
        sent with their modes. Returns {"entries": n, "bytes": n} of the server.
        Raises FileNotFoundError / NotADirectoryError for a bad local_dir, SandboxAPIError."""
        if not os.path.isdir(local_dir):
            raise NotADirectoryError(local_dir)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for root, dirs, files in os.walk(local_dir):
                dirs.sort()
                for name in sorted(dirs) + sorted(files):
                    full = os.path.join(root, name)
                    arc = os.path.relpath(full, local_dir)
                    info = tar.gettarinfo(full, arcname=arc)
                    info.uid = info.gid = 0
                    info.uname = info.gname = ""
                    if info.isfile():
                        with open(full, "rb") as f:
                            tar.addfile(info, f)
                    elif info.isdir() or info.issym():
                        tar.addfile(info)
        return self._t.json("PUT", self._path("/archive"), query={"path": remote_dir},
                            body=buf.getvalue(), timeout=max(self._t.timeout, 600))

    def download_dir(self, remote_dir, local_dir):
        """Copies remote_dir's contents into local_dir (created if missing) from one tar
        (GET /v1/sandboxes/{id}/archive?path=). Members that would land outside local_dir
        (absolute names, "..", links pointing out) and device files are refused.
        Returns the number of entries written. Raises ValueError for an unsafe member,
        NotFoundError, SandboxAPIError."""
        data = self._t.request("GET", self._path("/archive"), query={"path": remote_dir},
                               timeout=max(self._t.timeout, 600))[1]
        os.makedirs(local_dir, exist_ok=True)
        root = os.path.realpath(local_dir)
        count = 0
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            members = tar.getmembers()
            for m in members:
                _check_member(root, m)
            for m in members:
                if m.name in (".", "./"):
                    continue
                target = os.path.join(root, m.name)
                if m.isdir():
                    os.makedirs(target, exist_ok=True)
                    os.chmod(target, (m.mode & 0o7777) | 0o700)
                elif m.issym():
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    if os.path.lexists(target):
                        os.unlink(target)
                    os.symlink(m.linkname, target)
                elif m.isfile():
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    if os.path.islink(target):
                        os.unlink(target)
                    with tar.extractfile(m) as src, open(target, "wb") as dst:
                        dst.write(src.read())
                    os.chmod(target, m.mode & 0o7777)
                else:
                    continue
                count += 1
        return count

    # ---- preview URLs -------------------------------------------------------------------

    def preview_url(self, port, ttl_seconds=None):
        """Makes a URL that opens `port` inside the sandbox in a browser, with no header
        (POST /v1/sandboxes/{id}/previews; docs/adr/0015-preview-urls.md). Returns PreviewInfo;
        str() of it is the URL, which holds a token that opens only this port and nothing of
        the API. ttl_seconds: how long it works (default 3600; the server's maximum,
        --preview-max-ttl-seconds, defaults to 86400). Raises SandboxAPIError 400 (port not
        1..65535, ttl out of range), 409 (not running), 429 (100 live previews)."""
        body = {"port": int(port)}
        if ttl_seconds is not None:
            body["ttl_seconds"] = int(ttl_seconds)
        return PreviewInfo.from_json(self._t.json("POST", self._path("/previews"),
                                                  json_body=body))

    def list_previews(self, port=None):
        """The live preview URLs of the sandbox (GET .../previews), oldest first, as PreviewInfo
        without url or token (those are shown once). port: only that port's."""
        query = {"port": str(int(port))} if port is not None else None
        o = self._t.json("GET", self._path("/previews"), query=query)
        return [PreviewInfo.from_json(p) for p in o.get("previews", [])]

    def revoke_preview(self, preview):
        """Revokes a preview URL (DELETE .../previews/{id}): it stops working at once.
        preview: a PreviewInfo or its id. Raises NotFoundError when it is not (or no longer)
        live."""
        pid = preview.id if isinstance(preview, PreviewInfo) else preview
        self._t.request("DELETE", self._path("/previews/" + pid))

    # ---- snapshots and lifetime ---------------------------------------------------------

    def snapshot(self, name=None):
        """Snapshots the workspace (POST /v1/sandboxes/{id}/snapshots); returns SnapshotInfo.
        name: optional label (str). Raises SandboxAPIError (e.g. 409 when not running)."""
        body = {"name": name} if name else None
        o = self._t.json("POST", self._path("/snapshots"), json_body=body,
                         timeout=max(self._t.timeout, 600))
        return SnapshotInfo.from_json(o)

    def rollback(self, snapshot):
        """Restores the workspace to a snapshot of this sandbox (POST .../rollback).
        snapshot: a SnapshotInfo or its id. Stores the new SandboxInfo (source_snapshot_id set)
        and returns this handle, as seed B's rollback does (it answers every SandboxInfo
        field). Raises NotFoundError (unknown snapshot), SandboxAPIError."""
        sid = snapshot.id if isinstance(snapshot, SnapshotInfo) else snapshot
        self.info = SandboxInfo.from_json(self._t.json(
            "POST", self._path("/rollback"), json_body={"snapshot_id": sid},
            timeout=max(self._t.timeout, 600)))
        return self

    def fork(self, name=None, **options):
        """Snapshots this sandbox and starts a new sandbox from the snapshot; returns the new
        Sandbox. options as for SandboxClient.fork() (cpus, memory_mb, network,
        timeout_seconds)."""
        return self._client.fork(self.snapshot(name), **options)

    def fork_running(self, count=1, timeout_seconds=None):
        """Forks this sandbox as it runs (POST /v1/sandboxes/{id}/fork): `count` new sandboxes
        (1..the server's limit, 100 by default) with its template, limits, env and command
        defaults and a copy of its workspace at one instant; this one runs on, and no snapshot
        is left behind. The children's processes start fresh (ForkResult.memory is False).
        timeout_seconds: each child's TTL (default: this sandbox's).
        Returns a list of ForkResult, one per child in order: .sandbox (a Sandbox) or .error (a
        SandboxAPIError, e.g. 429 for a child past the quota). Raises SandboxAPIError when no
        child could be made (400 bad count, 404, 429 at the quota)."""
        body = {"count": int(count)}
        if timeout_seconds is not None:
            body["timeout_seconds"] = int(timeout_seconds)
        o = self._t.json("POST", self._path("/fork"), json_body=body,
                         timeout=max(self._t.timeout, 600))
        out = []
        for f in o.get("forks", []):
            if "sandbox" in f:
                out.append(ForkResult(sandbox=type(self)(self._client, f["sandbox"]),
                                      memory=bool(f.get("memory", False))))
            else:
                e = f.get("error") or {}
                status = int(f.get("status", 0))
                cls = NotFoundError if status == 404 else SandboxAPIError
                out.append(ForkResult(error=cls(status, e.get("code", "http_%d" % status),
                                                e.get("message", ""))))
        return out

    def set_timeout(self, timeout_seconds):
        """Sets the sandbox's time to live to timeout_seconds from now (POST .../timeout);
        stores the new SandboxInfo (its new expires_at) and returns this handle, as seed B's
        set_timeout does (sb.set_timeout(120).refresh()).
        Raises SandboxAPIError 400 for a value out of range."""
        self.info = SandboxInfo.from_json(self._t.json(
            "POST", self._path("/timeout"), json_body={"timeout_seconds": int(timeout_seconds)}))
        return self

    def pause(self, keep_memory=True):
        """Pauses the sandbox (POST /v1/sandboxes/{id}/pause): every process stops where it is,
        memory and files are kept, and its TTL stops; while paused, expires_at is when the
        server destroys it (its --paused-timeout-seconds). keep_memory=False (E2B's
        keepMemory: false) keeps only the files instead: every process ends, the sandbox holds
        disk only and no quota slot, and resume() starts it afresh (same id, spec and
        /workspace; /tmp and processes gone). Stores the new SandboxInfo (status "paused",
        paused_at set, paused_memory) and returns this handle, as set_timeout() does.
        Commands, files and processes of a paused sandbox raise SandboxAPIError 409 conflict
        until resume(). Raises SandboxAPIError 409 conflict when it is not running (e.g.
        already paused), 503 when the server's backend cannot pause; NotFoundError."""
        body = {} if keep_memory else {"memory": False}
        self.info = SandboxInfo.from_json(self._t.json("POST", self._path("/pause"),
                                                       json_body=body))
        return self

    def resume(self, timeout_seconds=None, keep_memory=True):
        """Resumes a paused sandbox (POST /v1/sandboxes/{id}/resume): its processes go on where
        they stopped (one paused with keep_memory=False starts afresh instead).
        timeout_seconds: its new time to live from now (int); None keeps its last TTL
        (timeout_seconds), counted from now. keep_memory=False resumes by a reboot (E2B's
        onResume: 'reboot'): every process that ran before ends. Stores the new SandboxInfo
        (status "running", the new expires_at) and returns this handle, as set_timeout() does.
        Raises SandboxAPIError 409 conflict when it is not paused, 400 for a timeout out of
        range, 429 when a sandbox paused files-only finds the quota full; NotFoundError."""
        body = {} if timeout_seconds is None else {"timeout_seconds": int(timeout_seconds)}
        if not keep_memory:
            body["memory"] = False
        self.info = SandboxInfo.from_json(self._t.json("POST", self._path("/resume"),
                                                       json_body=body))
        return self

    def destroy(self, missing_ok=False):
        """Destroys the sandbox and everything in it (DELETE /v1/sandboxes/{id}).
        Raises NotFoundError when it is already gone, as seed B's destroy() raises its
        SandboxAPIError 404, unless missing_ok (then a sandbox already gone is not an error).
        The context manager tolerates a sandbox already gone."""
        try:
            self._t.request("DELETE", self._path(), timeout=max(self._t.timeout, 120))
        except NotFoundError:
            if not missing_ok:
                raise


def _context_id(context):
    """A Context or a context id -> the id."""
    if isinstance(context, Context):
        return context.id
    if isinstance(context, str) and context:
        return context
    raise TypeError("context: a Context or a context id (str), got %r" % (context,))


def _check_member(root, m):
    name = m.name
    if name.startswith("/") or name.split("/").count("..") or "\0" in name:
        raise ValueError("download_dir: unsafe member name %r" % name)
    if not (m.isfile() or m.isdir() or m.issym()):
        if m.islnk() or m.isdev() or m.isfifo():
            raise ValueError("download_dir: refusing member %r (links and devices)" % name)
    target = os.path.realpath(os.path.join(root, name))
    if target != root and not target.startswith(root + os.sep):
        raise ValueError("download_dir: member %r leaves the directory" % name)
    if m.issym():
        link = m.linkname
        dest = posixpath.normpath(posixpath.join(posixpath.dirname(name), link))
        if link.startswith("/") or dest == ".." or dest.startswith("../"):
            raise ValueError("download_dir: symlink %r points outside (%r)" % (name, link))
