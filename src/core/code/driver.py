# agent-sandbox code-context driver for Python and bash (ADR 0019). sandboxd runs it in the
# sandbox as a background process; the server (core/code_service.cc) writes one request per line
# on its stdin and reads events, one JSON object per line, from its stdout:
#   in:  {"op": "execute", "id": "...", "code": "...", "timeout_ms": N, "max_output_bytes": N,
#         "env"?: {name: value}}    (env: set for this execution only, then put back)
#   out: {"type": "ready", "language": ..., "pid": N}                        once, at start
#        {"type": "stdout"|"stderr", "id", "data"}
#        {"type": "result", "id", "is_main_result", "data": {mime: value}, "chart"?}
#        {"type": "error", "id", "name", "value", "traceback"}
#        {"type": "end", "id", "status": "ok"|"error"|"timeout"|"dead", "execution_count",
#         "duration_ms", "timed_out", "truncated", "truncated_outputs": [name...],
#         "dropped_results"}
#        {"type": "fatal", "message"}                                      then it exits 3
# SIGINT interrupts the running execution (the interrupt route sends it); the context lives on.
# A kernel that dies ends the execution with status "dead" and the driver exits 3: the server
# sees the context as dead until it is restarted.
# Python runs in Debian's ipykernel through jupyter_client; bash in one persistent
# `bash --noprofile --norc` in its own session. Written for Python 3.11, standard library only
# (plus jupyter_client for Python contexts). The server hands this source over as the first
# line of stdin (a JSON string) to a small `python3 -c` bootstrap, so nothing is written into the
# sandbox's files.
import json
import os
import queue
import re
import shlex
import signal
import subprocess
import sys
import threading
import time

_OUT = sys.stdout
_LOCK = threading.Lock()
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_INTERRUPT = threading.Event()


# Flow control. sandboxd keeps a process's output in a bounded ring that never waits for readers
# (ADR 0011), so a burst larger than the ring (a 1 MiB print, a big PNG) would be overwritten
# before the server read it. The driver therefore keeps at most _WINDOW bytes of stdout that the
# server has not acknowledged ({"op": "ack", "bytes": N} lines on stdin, N bytes more consumed);
# the count restarts with each execution. If no acknowledgement comes for _STALL_S (the server
# stopped reading: its client went away) flow control is off until the next execution.
_WINDOW = 64 * 1024
_STALL_S = 10.0
_FLOW = threading.Condition()
_sent = 0
_acked = 0
_stalled = False


def reset_window():
    global _sent, _acked, _stalled
    with _FLOW:
        _sent, _acked, _stalled = 0, 0, False


def emit(obj):
    global _sent, _stalled
    data = (json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)
            + "\n").encode("utf-8", "replace")
    with _LOCK:
        view = memoryview(data)
        while view:
            with _FLOW:
                room = _WINDOW - (_sent - _acked)
                if room <= 0 and not _stalled:
                    seen = _acked
                    _FLOW.wait(_STALL_S)
                    if _acked == seen:
                        _stalled = True
                    continue
                n = len(view) if _stalled else min(room, len(view))
                _sent += n
            _OUT.buffer.write(view[:n])
            _OUT.buffer.flush()
            view = view[n:]


def fatal(message):
    emit({"type": "fatal", "message": message})
    sys.exit(3)


class OutputCap:
    """Counts the output of one execution, stdout, stderr and results together (the server's
    one budget, kDefaultCodeOutputBytes): past the cap text is cut and a result that does not
    fit is left out whole. `cut` names what lost something."""

    def __init__(self, limit):
        self.left = limit
        self.truncated = False
        self.cut = set()
        self.dropped_results = 0

    def take(self, text, name):
        data = text.encode("utf-8", "replace")
        if len(data) <= self.left:
            self.left -= len(data)
            return text
        self.truncated = True
        self.cut.add(name)
        keep = data[: max(self.left, 0)].decode("utf-8", "ignore")
        self.left = 0
        return keep

    def take_result(self, data, chart):
        """Whether a result's MIME values (and chart) fit; they are counted if so."""
        size = 0 if chart is None else len(json.dumps(chart))
        for value in data.values():
            size += len(value.encode("utf-8", "replace")) if isinstance(value, str) else \
                len(json.dumps(value))
        if size <= self.left:
            self.left -= size
            return True
        self.truncated = True
        self.cut.add("results")
        self.dropped_results += 1
        return False

    def end_fields(self):
        return {"truncated": self.truncated, "truncated_outputs": sorted(self.cut),
                "dropped_results": self.dropped_results}


def stream(exec_id, name, text, cap):
    text = cap.take(text, name)
    if text:
        emit({"type": name, "id": exec_id, "data": text})


class Interrupter:
    """Interrupts one execution, once: at its timeout_ms (0 = none) or when SIGINT (the
    interrupt route) arrives. poll() returns the seconds since the interrupt, None before."""

    def __init__(self, timeout_ms, interrupt):
        self.started = time.monotonic()
        self.deadline = self.started + timeout_ms / 1000.0 if timeout_ms > 0 else None
        self.timed_out = False
        self._at = None
        self.at_wall = None  # time.time() of the interrupt, to compare with message dates
        self._interrupt = interrupt
        _INTERRUPT.clear()

    def poll(self):
        now = time.monotonic()
        if self.deadline is not None and now >= self.deadline and self._at is None:
            self.timed_out = True
            _INTERRUPT.set()
        if _INTERRUPT.is_set() and self._at is None:
            self._at = now
            self.at_wall = time.time()
            try:
                self._interrupt()
            except Exception:
                pass
        return None if self._at is None else now - self._at

    def duration_ms(self):
        return int((time.monotonic() - self.started) * 1000)


def report_dead(exec_id, why, count, guard, cap):
    """The end of an execution whose kernel is gone; the driver exits next."""
    emit({"type": "error", "id": exec_id, "name": "KernelDied", "value": why, "traceback": []})
    emit(dict({"type": "end", "id": exec_id, "status": "dead", "execution_count": count,
               "duration_ms": guard.duration_ms(), "timed_out": guard.timed_out},
              **cap.end_fields()))


# ---- Python: a Jupyter kernel -------------------------------------------------------------

# Runs once in the kernel: matplotlib draws off-screen, and after every cell each open figure is
# displayed as PNG plus the chart data an agent can read without vision (the way E2B's
# interpreter extracts it), then closed.
_PY_STARTUP = r'''
def __asb_setup():
    import os, sys, warnings
    os.environ["MPLBACKEND"] = "Agg"
    warnings.filterwarnings("ignore", message=".*non-interactive.*")
    ip = get_ipython()

    def num(v):
        try:
            import datetime
            if isinstance(v, (datetime.date, datetime.datetime)):
                return v.isoformat()
        except Exception:
            pass
        try:
            f = float(v)
            return int(f) if f.is_integer() and abs(f) < 2**53 else f
        except Exception:
            return str(v)

    def axis_info(ax):
        info = {
            "title": ax.get_title() or None,
            "x_label": ax.get_xlabel() or None,
            "y_label": ax.get_ylabel() or None,
            "x_scale": ax.get_xscale(),
            "y_scale": ax.get_yscale(),
            "x_ticks": [num(t) for t in ax.get_xticks()],
            "x_tick_labels": [t.get_text() for t in ax.get_xticklabels()],
            "y_ticks": [num(t) for t in ax.get_yticks()],
            "y_tick_labels": [t.get_text() for t in ax.get_yticklabels()],
        }
        return info

    def chart_of(ax):
        from matplotlib.container import BarContainer
        from matplotlib.collections import PathCollection
        from matplotlib.patches import Wedge
        wedges = [p for p in ax.patches if isinstance(p, Wedge)]
        if wedges:
            labels = [t.get_text() for t in ax.texts]
            elements = []
            for i, w in enumerate(wedges):
                label = w.get_label()
                if (not label or label.startswith("_")) and i < len(labels):
                    label = labels[i]
                elements.append({"label": label, "angle": num(w.theta2 - w.theta1),
                                 "radius": num(w.r)})
            return {"type": "pie", "title": ax.get_title() or None, "elements": elements}
        bars = [c for c in ax.containers if isinstance(c, BarContainer)]
        if bars:
            info = axis_info(ax)
            elements = []
            for c in bars:
                group = c.get_label()
                group = None if not group or group.startswith("_") else group
                for rect in c.patches:
                    x = rect.get_x() + rect.get_width() / 2
                    label = None
                    for tick, text in zip(ax.get_xticks(), info["x_tick_labels"]):
                        if abs(tick - x) < 1e-6 and text:
                            label = text
                    elements.append({"label": label if label is not None else num(x),
                                     "value": num(rect.get_height()), "group": group})
            return dict(type="bar", elements=elements, **info)
        scatters = [c for c in ax.collections if isinstance(c, PathCollection)]
        lines = [l for l in ax.get_lines() if len(l.get_xdata()) > 0]
        if scatters and not lines:
            info = axis_info(ax)
            elements = []
            for i, c in enumerate(scatters):
                label = c.get_label()
                elements.append({"label": label if label and not label.startswith("_")
                                 else "series %d" % i,
                                 "points": [[num(x), num(y)] for x, y in c.get_offsets()]})
            return dict(type="scatter", elements=elements, **info)
        if lines:
            info = axis_info(ax)
            elements = []
            for i, l in enumerate(lines):
                label = l.get_label()
                elements.append({"label": label if label and not label.startswith("_")
                                 else "line %d" % i,
                                 "points": [[num(x), num(y)] for x, y in
                                            zip(l.get_xdata(), l.get_ydata())]})
            return dict(type="line", elements=elements, **info)
        return None

    def chart_of_figure(fig):
        charts = []
        for ax in fig.axes:
            try:
                c = chart_of(ax)
            except Exception:
                c = None
            if c is not None:
                charts.append(c)
        if not charts:
            return None
        if len(charts) == 1:
            return charts[0]
        title = fig._suptitle.get_text() if getattr(fig, "_suptitle", None) else None
        return {"type": "superchart", "title": title, "elements": charts}

    def flush_figures(*_args, **_kw):
        if "matplotlib.pyplot" not in sys.modules:
            return
        import base64, io
        import matplotlib.pyplot as plt
        from IPython.display import display
        for num_ in plt.get_fignums():
            fig = plt.figure(num_)
            buf = io.BytesIO()
            fig.savefig(buf, format="png", bbox_inches="tight")
            bundle = {"image/png": base64.b64encode(buf.getvalue()).decode("ascii"),
                      "text/plain": repr(fig)}
            chart = chart_of_figure(fig)
            if chart is not None:
                bundle["application/vnd.agent-sandbox.chart+json"] = chart
            display(bundle, raw=True)
        plt.close("all")

    def post_run_cell(*_args):
        if "matplotlib.pyplot" in sys.modules:
            import matplotlib.pyplot as plt
            if getattr(plt.show, "__name__", "") != "flush_figures":
                plt.show = flush_figures
        flush_figures()

    ip.events.register("post_run_cell", post_run_cell)

    # A print flood must not outrun the driver: the kernel's iopub socket queues every message
    # it cannot send yet, and a loop printing 64 KiB lines grew that queue until the kernel
    # was OOM-killed (status "dead") on a loaded machine. The driver keeps at most 1 MiB of an
    # execution's output (kDefaultCodeOutputBytes); the kernel passes on 2 MiB, enough for the
    # driver to see and report the cut, and drops the rest itself.
    limit = 2 << 20
    sent = {"n": 0}

    def capped(write):
        def capped_write(text):
            if sent["n"] >= limit:
                return len(text)
            sent["n"] += len(text)
            return write(text)
        return capped_write

    for name in ("stdout", "stderr"):
        stream = getattr(sys, name, None)
        if stream is not None and hasattr(stream, "write"):
            try:
                stream.write = capped(stream.write)
            except (AttributeError, TypeError):
                pass
    ip.events.register("pre_run_cell", lambda *_args: sent.update(n=0))

__asb_setup()
del __asb_setup
'''


def run_python(cwd, cap_default):
    try:
        from jupyter_client.manager import KernelManager
    except ImportError:
        fatal("Python code contexts need Debian's python3-ipykernel and python3-jupyter-client "
              "in the sandbox; create the sandbox from the \"python\" template")
    runtime = "/tmp/.agent-sandbox/code/runtime-%d" % os.getpid()
    os.makedirs(runtime, mode=0o700, exist_ok=True)
    os.environ["JUPYTER_RUNTIME_DIR"] = runtime
    os.environ["MPLBACKEND"] = "Agg"
    os.environ.setdefault("MPLCONFIGDIR", "/tmp/matplotlib")
    os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # debugpy's start-up notice
    os.environ.setdefault("IPYTHONDIR", "/tmp/.agent-sandbox/ipython")  # $HOME may be read-only
    km = KernelManager(kernel_name="python3", transport="ipc",
                       connection_file=os.path.join(runtime, "kernel.json"))
    log = open(os.path.join(runtime, "kernel.log"), "ab")
    try:
        km.start_kernel(cwd=cwd, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    except Exception as e:
        fatal("the Python kernel did not start: %s" % e)
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
    except Exception as e:
        fatal("the Python kernel did not become ready: %s" % e)
    kc.execute(_PY_STARTUP, silent=True, store_history=False)
    reply = kc.get_shell_msg(timeout=30)
    if reply["content"].get("status") != "ok":
        fatal("the Python kernel's start-up code failed: %s" % reply["content"].get("evalue"))

    def run_silent(code):
        # Code of ours in the kernel: no output, no history, no execution count. Its reply is
        # found by its id among the shell replies (those of earlier cells are never read).
        msg_id = kc.execute(code, silent=True, store_history=False)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                reply = kc.get_shell_msg(timeout=1)
            except Exception:
                if not km.is_alive():
                    return False
                continue
            if reply.get("parent_header", {}).get("msg_id") == msg_id:
                return reply["content"].get("status") == "ok"
        return False

    def execute(req):
        exec_id = req.get("id")
        cap = OutputCap(int(req.get("max_output_bytes") or cap_default))
        env = req.get("env") or {}
        # This execution's environment: set in the kernel's os.environ (which commands it runs
        # inherit), the previous values kept on the os module, out of the user's namespace.
        if env and not run_silent(
                "(lambda o, e: (setattr(o, '_asb_env_saved', {k: o.environ.get(k) for k in e}),"
                " o.environ.update(e)))(__import__('os'), __import__('json').loads(%r))"
                % json.dumps(env)):
            emit({"type": "error", "id": exec_id, "name": "EnvironmentError",
                  "value": "the execution's env could not be set in the kernel", "traceback": []})
            emit({"type": "end", "id": exec_id, "status": "error", "execution_count": None,
                  "duration_ms": 0, "timed_out": False, "truncated": False})
            return
        guard = Interrupter(int(req.get("timeout_ms") or 0), km.interrupt_kernel)
        msg_id = kc.execute(req.get("code", ""), store_history=True, allow_stdin=False,
                            stop_on_error=False)
        status, count, idle = "ok", None, False
        # After an interrupt the kernel may have stopped long ago while its output still waits
        # in the iopub queue (a print flood queues ~1000 messages of 64 KiB; draining them on a
        # loaded machine takes seconds). Reading output it sent before the interrupt is
        # progress, not a kernel that ignores the interrupt: the 10 s grace counts from the
        # last such message (up to 60 s in all).
        backlog_at = None
        while not idle:
            since = guard.poll()
            alive = km.is_alive()
            stuck = since is not None and (
                since > 60 or (since > 10 and (backlog_at is None
                                               or time.monotonic() - backlog_at > 10)))
            if not alive or stuck:
                report_dead(exec_id, "the Python kernel died" if not alive
                            else "the Python kernel did not stop after an interrupt", count,
                            guard, cap)
                try:
                    km.shutdown_kernel(now=True)
                except Exception:
                    pass
                sys.exit(3)
            try:
                msg = kc.get_iopub_msg(timeout=0.1)
            except Exception:
                continue
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if guard.at_wall is not None:
                sent = msg.get("header", {}).get("date")
                try:
                    if sent is not None and sent.timestamp() < guard.at_wall:
                        backlog_at = time.monotonic()
                except Exception:
                    pass
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                stream(exec_id, "stderr" if content.get("name") == "stderr" else "stdout",
                       content.get("text", ""), cap)
            elif kind in ("execute_result", "display_data", "update_display_data"):
                data = dict(content.get("data") or {})
                event = {"type": "result", "id": exec_id,
                         "is_main_result": kind == "execute_result", "data": data}
                chart = data.pop("application/vnd.agent-sandbox.chart+json", None)
                if chart is not None:
                    event["chart"] = chart
                if cap.take_result(data, chart):
                    emit(event)
            elif kind == "execute_input":
                count = content.get("execution_count", count)
            elif kind == "error":
                status = "error"
                emit({"type": "error", "id": exec_id, "name": content.get("ename", ""),
                      "value": content.get("evalue", ""),
                      "traceback": [_ANSI.sub("", t) for t in content.get("traceback", [])]})
            elif kind == "status" and content.get("execution_state") == "idle":
                idle = True
        if guard.timed_out:
            status = "timeout"
        if env:
            run_silent("(lambda o: [o.environ.pop(k, None) if v is None else "
                       "o.environ.__setitem__(k, v) for k, v in "
                       "getattr(o, '_asb_env_saved', {}).items()])(__import__('os'))")
        emit(dict({"type": "end", "id": exec_id, "status": status, "execution_count": count,
                   "duration_ms": guard.duration_ms(), "timed_out": guard.timed_out},
                  **cap.end_fields()))

    return execute


# ---- bash: one persistent shell -----------------------------------------------------------

_BASH_PRELUDE = r'''
__asb_run() {
  trap 'trap - INT; return 130' INT
  . "$1" </dev/null
}
'''


def run_bash(cwd, cap_default):
    shell = subprocess.Popen(["bash", "--noprofile", "--norc"], cwd=cwd, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
    workdir = "/tmp/.agent-sandbox/code/bash-%d" % os.getpid()
    os.makedirs(workdir, mode=0o700, exist_ok=True)
    shell.stdin.write(_BASH_PRELUDE.encode())
    shell.stdin.flush()
    counter = [0]

    def execute(req):
        exec_id = req.get("id")
        cap = OutputCap(int(req.get("max_output_bytes") or cap_default))
        counter[0] += 1
        nonce = os.urandom(8).hex()
        marker = ("\x1eASB-END-%s" % nonce).encode()
        cell = os.path.join(workdir, "cell.sh")
        with open(cell, "w") as f:
            f.write(req.get("code", ""))
            f.write("\n")
        # This execution's environment (names checked by the server): exported around the cell,
        # then the variables are put back as `declare -p` saw them (or unset).
        env = req.get("env") or {}
        names = " ".join(env)
        pre = post = ""
        if env:
            pre = "__asb_env_saved=$(declare -p %s 2>/dev/null); export %s; " % (
                names, " ".join("%s=%s" % (k, shlex.quote(v)) for k, v in env.items()))
            post = 'unset %s; eval "$__asb_env_saved"; unset __asb_env_saved; ' % names
        command = ("%s__asb_run %s; __asb_rc=$?; %sprintf '\\n%s %%d\\n' $__asb_rc; "
                   "printf '\\n%s\\n' >&2\n") % (pre, cell, post, marker.decode(),
                                                   marker.decode())
        try:
            shell.stdin.write(command.encode())
            shell.stdin.flush()
        except OSError:
            pass
        import selectors
        sel = selectors.DefaultSelector()
        bufs = {"stdout": b"", "stderr": b""}
        done = {"stdout": False, "stderr": False}
        sel.register(shell.stdout, selectors.EVENT_READ, "stdout")
        sel.register(shell.stderr, selectors.EVENT_READ, "stderr")
        guard = Interrupter(int(req.get("timeout_ms") or 0),
                            lambda: os.killpg(shell.pid, signal.SIGINT))
        exit_code, dead = None, False
        while not all(done.values()):
            since = guard.poll()
            if since is not None and since > 5:
                try:
                    os.killpg(shell.pid, signal.SIGKILL)
                except OSError:
                    pass
                dead = True
                break
            for key, _ in sel.select(timeout=0.1):
                name = key.data
                chunk = os.read(key.fileobj.fileno(), 65536)
                if not chunk:
                    dead = True
                    done = {"stdout": True, "stderr": True}
                    break
                bufs[name] += chunk
                at = bufs[name].find(b"\n" + marker)
                if at >= 0:
                    rest = bufs[name][at + 1 + len(marker):]
                    if name == "stdout":
                        m = re.match(rb" (-?\d+)\n", rest)
                        if not m:
                            continue  # the marker's line has not fully arrived yet
                        exit_code = int(m.group(1))
                    elif not rest.startswith(b"\n"):
                        continue
                    text, bufs[name] = bufs[name][:at], b""
                    if text:
                        stream(exec_id, name, text.decode("utf-8", "replace"), cap)
                    done[name] = True
                    sel.unregister(key.fileobj)
                else:
                    # Keep what could be the start of a marker; send the rest.
                    keep = len(marker) + 1
                    cut = len(bufs[name]) - keep
                    while cut > 0 and (bufs[name][cut] & 0xC0) == 0x80:
                        cut -= 1  # never split a UTF-8 character
                    if cut > 0:
                        stream(exec_id, name, bufs[name][:cut].decode("utf-8", "replace"), cap)
                        bufs[name] = bufs[name][cut:]
            if shell.poll() is not None:
                dead = True
                break
        sel.close()
        if dead:
            try:
                shell.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass
        if dead:
            for name, rest in bufs.items():
                if rest:
                    stream(exec_id, name, rest.decode("utf-8", "replace"), cap)
            report_dead(exec_id, "the bash shell exited" if shell.poll() is not None
                        else "the bash shell did not stop after an interrupt", counter[0],
                        guard, cap)
            sys.exit(3)
        status = "timeout" if guard.timed_out else ("ok" if exit_code == 0 else "error")
        emit(dict({"type": "end", "id": exec_id, "status": status, "execution_count": counter[0],
                   "duration_ms": guard.duration_ms(), "timed_out": guard.timed_out,
                   "exit_code": exit_code}, **cap.end_fields()))

    return execute


def main():
    argv = sys.argv[1:]
    args = {argv[i]: argv[i + 1] for i in range(len(argv) - 1) if argv[i].startswith("--")}
    language = args.get("--language", "python")
    cwd = args.get("--cwd", "/workspace")
    cap_default = int(args.get("--max-output-bytes", 1 << 20))
    if not os.path.isdir(cwd):
        fatal("cwd %s is not a directory in the sandbox" % cwd)
    signal.signal(signal.SIGINT, lambda *_: _INTERRUPT.set())
    if language == "python":
        execute = run_python(cwd, cap_default)
    elif language == "bash":
        execute = run_bash(cwd, cap_default)
    else:
        fatal("unknown language %s" % language)
    requests = queue.Queue()

    def read_stdin():
        global _acked
        for line in sys.stdin:
            try:
                req = json.loads(line)
            except ValueError:
                continue
            if not isinstance(req, dict):
                continue
            if req.get("op") == "ack":
                with _FLOW:
                    _acked += int(req.get("bytes") or 0)
                    _FLOW.notify_all()
            elif req.get("op") == "execute":
                requests.put(req)
        requests.put(None)

    threading.Thread(target=read_stdin, daemon=True).start()
    emit({"type": "ready", "language": language, "pid": os.getpid()})
    while True:
        req = requests.get()
        if req is None:
            break
        reset_window()
        execute(req)


if __name__ == "__main__":
    main()
