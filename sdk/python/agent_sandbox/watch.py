"""FileWatch: a running watch of a sandbox directory (Sandbox.watch_files()).

The route is GET /v1/sandboxes/{id}/files/watch (NDJSON, api/openapi.json "watchFiles"): a
"start" line once the watch is armed, one line per change, "overflow" when events were lost,
"keepalive" after quiet, and last "end" (the directory went away) or "error". A thread of the
watch reads the lines into a bounded buffer, so that next_event() can wait with a timeout
without breaking the connection (a socket timeout would: http.client cannot resume a read that
timed out); when the buffer is full it stops reading, and the sandbox then holds the events
(max_queue) and reports an overflow.
"""

import http.client
import json
import queue
import socket
import threading
import weakref

from .errors import NotFoundError, SandboxAPIError, SandboxConnectionError
from .types import FileEvent

# The HTTP status the server answers for each error code (docs/adr/0007-rest-api-server.md), so
# that an error line of the stream raises what the same failure raises before it: its
# status_code is this one, not the stream's 200.
_STATUS_OF_CODE = {
    "invalid_request": 400, "unauthorized": 401, "forbidden": 403, "not_found": 404,
    "conflict": 409, "payload_too_large": 413, "limit_exceeded": 429, "internal": 500,
    "backend_error": 502, "unavailable": 503, "cancelled": 503, "timeout": 504,
}

_CHANGES = ("create", "write", "remove", "rename", "chmod")

# Events read ahead of the consumer before the reader thread stops reading.
_READ_AHEAD = 1024

# The least time (seconds) the reader waits for a line once the watch runs: the server sends a
# keepalive every 10 s of quiet (serve --stream-keepalive-seconds), so a client timeout shorter
# than that must not end a quiet watch. Longer than this without a byte: the server is gone.
MIN_READ_TIMEOUT = 60.0


def stream_error(code, message, request_id=None):
    """The SandboxAPIError (NotFoundError for "not_found") of an error line of a stream: code and
    message as sent, status_code the one the server answers for that code."""
    cls = NotFoundError if code == "not_found" else SandboxAPIError
    return cls(_STATUS_OF_CODE.get(code, 500), code, message, request_id)


def _event_of(ev):
    """A change or overflow line -> FileEvent; None for any other line."""
    kind = ev.get("type")
    if kind in _CHANGES:
        return FileEvent(kind, ev.get("path", ""), bool(ev.get("dir")), 0)
    if kind == "overflow":
        return FileEvent("overflow", None, False, int(ev.get("dropped", 0) or 0))
    return None


def read_line(resp, what):
    """The next non-empty line of the stream as a dict; None at the end of the body.
    Raises SandboxConnectionError when it breaks or a line is not JSON."""
    while True:
        try:
            line = resp.readline()
        except (OSError, ValueError, http.client.HTTPException) as e:
            raise SandboxConnectionError("%s broke: %s" % (what, e)) from e
        if not line:
            return None
        line = line.strip()
        if not line:
            continue
        try:
            return json.loads(line)
        except ValueError as e:
            raise SandboxConnectionError("%s: not a JSON line: %r" % (what, line[:200])) from e


def _reader(resp, items, stop, what, request_id):
    """The reader thread: puts ("event", FileEvent), then one ("end", reason) or ("error",
    exception) into items; returns early once stop is set. Holds no reference to the FileWatch
    (so that an unreferenced watch is collected, and its finalizer closes the connection)."""

    def put(item):
        while not stop.is_set():
            try:
                items.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    try:
        while not stop.is_set():
            ev = read_line(resp, what)
            if ev is None:
                put(("error", SandboxConnectionError("%s ended without an end event" % what)))
                return
            kind = ev.get("type")
            if kind == "end":
                put(("end", ev.get("reason", "")))
                return
            if kind == "error":
                put(("error", stream_error(ev.get("code", "internal"), ev.get("message", ""),
                                           request_id)))
                return
            event = _event_of(ev)
            if event is not None and not put(("event", event)):
                return
            # "keepalive" and unknown types are skipped.
    except SandboxConnectionError as e:
        put(("error", e))
    except Exception as e:  # never leave the consumer waiting on a dead thread
        put(("error", SandboxConnectionError("%s: %s" % (what, e))))


def _shutdown(stop, sock, conn, resp, thread):
    """Stops a watch: the reader thread, then the connection (which ends the watch in the
    sandbox). Safe to call more than once."""
    stop.set()
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)  # wakes the reader blocked in recv()
        except OSError:
            pass
    if thread is not None and thread is not threading.current_thread():
        thread.join(10)
    resp.close()
    conn.close()


class FileWatch:
    """A running watch of one sandbox directory, from Sandbox.watch_files(). The watch was armed
    before watch_files() returned: every change after that is reported.

    Iterating it yields FileEvent(type, path, dir, dropped) as the changes happen, and stops
    (StopIteration) when the watch is over: the watched directory was removed (end_reason
    "removed"; "unmounted" when its file system went away) or close() was called. An error of
    the watch after it started raises SandboxAPIError (e.g. code "backend_error" when the
    sandbox was destroyed), a broken connection SandboxConnectionError. next_event(timeout)
    waits for one event with a time limit. Keepalives never surface.

    As a context manager it closes the watch on exit:

        with sb.watch_files("src", recursive=True) as w:
            for ev in w:
                print(ev.type, ev.path)

    Attributes: path (the watched directory, absolute), watches (how many directories it
    follows: 1, or with recursive the directory and every one below it when it started),
    sandbox_id, end_reason (None until the "end" line).
    """

    def __init__(self, sandbox_id, conn, resp, start, read_timeout):
        self.sandbox_id = sandbox_id
        self.path = start.get("path", "")
        self.watches = start.get("watches", 0)
        self.end_reason = None
        self._done = False
        self._items = queue.Queue(maxsize=_READ_AHEAD)
        self._stop = threading.Event()
        sock = getattr(resp, "asb_socket", None)
        if sock is not None:
            sock.settimeout(read_timeout)
        what = "file watch of %s in %s" % (self.path, sandbox_id)
        thread = threading.Thread(target=_reader, name="asb-watch-" + sandbox_id, daemon=True,
                                  args=(resp, self._items, self._stop, what,
                                        resp.getheader("X-Request-Id")))
        self._finalizer = weakref.finalize(self, _shutdown, self._stop, sock, conn, resp,
                                           thread)
        thread.start()

    def __repr__(self):
        return "FileWatch(path=%r, watches=%r, closed=%r)" % (self.path, self.watches,
                                                             self.closed)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __iter__(self):
        return self

    def __next__(self):
        ev = self.next_event()
        if ev is None:
            raise StopIteration
        return ev

    @property
    def closed(self):
        """True once the watch is over: closed, ended ("end" line) or failed (error raised)."""
        return self._done

    def next_event(self, timeout=None):
        """Waits for the next change and returns it as a FileEvent.

        timeout: seconds to wait at most (float); None waits as long as it takes.
        Returns None when the timeout passed with no event (the watch keeps running: call
        again), and at once when the watch is over (closed is then True; end_reason says
        "removed" when the directory went away).
        Raises SandboxAPIError (NotFoundError for code "not_found") when the watch failed
        after it started, e.g. code "backend_error" when the sandbox was destroyed, and
        SandboxConnectionError when the connection broke; the watch is then over.
        """
        if self._done:
            return None
        try:
            kind, value = self._items.get(timeout=timeout)
        except queue.Empty:
            return None
        if kind == "event":
            return value
        self.close()
        if kind == "end":
            self.end_reason = value
        elif kind == "error":
            raise value
        return None  # "closed": close() from another thread

    def close(self):
        """Stops the watch: closes the connection, which ends it in the sandbox (it no longer
        counts against the 8 watches of the sandbox). Events not yet taken are discarded;
        iteration then stops and next_event() returns None. Safe to call more than once and
        from another thread (a next_event() waiting there returns None)."""
        self._done = True
        self._finalizer()
        while True:  # wake a consumer blocked in get(): the reader has stopped by now
            try:
                self._items.get_nowait()
            except queue.Empty:
                break
        try:
            self._items.put_nowait(("closed", None))
        except queue.Full:
            pass
