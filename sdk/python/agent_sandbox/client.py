"""SandboxClient: the entry point of the SDK.

Seed B's SDK lives in a module of this name, so its imports work here as written:
    from agent_sandbox.client import SandboxClient, Sandbox, ExecResult, ExecEvent, FileInfo, \
        SnapshotInfo, SandboxAPIError
"""

import os

from ._http import Transport
from .errors import SandboxAPIError
from .sandbox import Sandbox
from .types import ExecEvent, ExecResult, FileInfo, SnapshotInfo, TemplateInfo

DEFAULT_URL = "http://127.0.0.1:8080"

__all__ = ["ExecEvent", "ExecResult", "FileInfo", "Sandbox", "SandboxAPIError", "SandboxClient",
           "SnapshotInfo"]


class SandboxClient:
    """A client of one agent-sandbox server.

    base_url: the server, e.g. "http://127.0.0.1:8080"; default $AGENT_SANDBOX_URL, else
      http://127.0.0.1:8080.
    api_key: sent as "Authorization: Bearer <key>"; default $AGENT_SANDBOX_API_KEY (none if
      unset, for a server started with --insecure-no-auth).
    timeout: socket timeout in seconds per request (connect and each read); long execs need
      more than their own timeout. Default 300.

    As a context manager (`with SandboxClient() as client:`, seed B's form) it is closed when
    the block ends.
    """

    def __init__(self, base_url=None, api_key=None, timeout=300.0):
        base_url = base_url or os.environ.get("AGENT_SANDBOX_URL") or DEFAULT_URL
        if api_key is None:
            api_key = os.environ.get("AGENT_SANDBOX_API_KEY") or None
        self._transport = Transport(base_url, api_key, timeout)

    @property
    def base_url(self):
        """The server's base URL (str, no trailing slash)."""
        return self._transport.base_url

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        """Closes the client: later calls through it, or through its Sandbox handles, raise
        SandboxConnectionError. Each request has its own connection, so nothing stays open
        between calls; closing twice is harmless."""
        self._transport.close()

    def health(self):
        """The server's liveness (GET /healthz, no key needed): a dict {"status": "ok",
        "version", "backend"}. Raises SandboxConnectionError when it does not answer."""
        return self._transport.json("GET", "/healthz")

    def backends(self):
        """The isolation backends the server knows (GET /v1/backends): a dict {"default": name,
        "backends": [{"name", "available", "reason", "accelerator", "capabilities"}]}. A
        create's backend= names one that is available; reason says why one is not (e.g.
        microvm without its guest kernel). Raises SandboxAPIError, SandboxConnectionError."""
        return self._transport.json("GET", "/v1/backends")

    def create(self, template=None, cpus=None, memory_mb=None, pids_limit=None,
               workspace_mb=None, timeout_seconds=None, idle_timeout_seconds=None, env=None,
               network=None, idempotency_key=None, image=None, read_only_rootfs=None,
               auto_pause=None, backend=None, auto_resume=None, auto_pause_keep_memory=None,
               allow_public_traffic=None, mask_request_host=None):
        """Creates and starts a sandbox (POST /v1/sandboxes); returns its Sandbox handle.

        template: name (default "base"); cpus: cores (float); memory_mb, workspace_mb: MiB;
        pids_limit: process cap; timeout_seconds: time to live; idle_timeout_seconds; env:
        dict of variables for every command; network: bool; auto_pause: True pauses the
        sandbox when its TTL or idle timeout passes instead of destroying it (resume() lets it
        go on; the server destroys it after its paused timeout); auto_resume: True lets a
        request to a paused sandbox (exec, files, processes, ports, code) resume it and be
        served instead of raising 409; auto_pause_keep_memory: False makes that auto-pause keep
        only the files (as pause(keep_memory=False)); backend: the isolation, "ns"
        (Linux namespaces) or "microvm" (a VM with a kernel of its own), one that
        backends() lists (default: the server's); allow_public_traffic: True lets its ports
        answer on their preview hosts to anyone, without a token (E2B's allowPublicTraffic);
        mask_request_host: the Host header requests to its ports carry, "${PORT}" replaced by
        the port (E2B's maskRequestHost). Omitted values take the server's defaults. idempotency_key: 1-255 printable ASCII characters sent as
        Idempotency-Key, so a retry after a cut-off create returns the same sandbox instead of
        making a second one (the same key with other arguments: SandboxAPIError 409 conflict).
        Seed B's names: image, an alias of template (both with different values: ValueError);
        read_only_rootfs: True is what every sandbox has (the template's root is read-only);
        False answers SandboxAPIError 400, as this server cannot give a writable root.
        Raises SandboxAPIError 400 (invalid_request: out of range, unknown template, auto_pause
        on a backend that cannot pause, an unknown backend), 429 (limit_exceeded), 503
        (unavailable: a backend the server knows but cannot run here, with the reason),
        SandboxConnectionError.
        """
        if template is not None and image is not None and template != image:
            raise ValueError("template=%r and image=%r: both given with different values "
                             "(they are aliases)" % (template, image))
        body = {k: v for k, v in (
            ("template", template if template is not None else image), ("cpus", cpus),
            ("memory_mb", memory_mb), ("pids_limit", pids_limit), ("workspace_mb", workspace_mb),
            ("timeout_seconds", timeout_seconds), ("idle_timeout_seconds", idle_timeout_seconds),
            ("env", env), ("network", network), ("read_only_rootfs", read_only_rootfs),
            ("auto_pause", auto_pause), ("auto_pause_keep_memory", auto_pause_keep_memory),
            ("auto_resume", auto_resume), ("backend", backend),
            ("allow_public_traffic", allow_public_traffic),
            ("mask_request_host", mask_request_host))
            if v is not None}
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key is not None else None
        return Sandbox(self, self._transport.json("POST", "/v1/sandboxes", json_body=body,
                                                  headers=headers))

    def get(self, sandbox_id):
        """Returns the Sandbox with this id (GET /v1/sandboxes/{id}).
        Raises NotFoundError when it does not exist or belongs to another key."""
        return Sandbox(self, self._transport.json("GET", "/v1/sandboxes/" + sandbox_id))

    def list(self, order=None, template=None, status=None, started_after=None,
             started_before=None):
        """Returns a Sandbox handle for every sandbox this key can see (GET /v1/sandboxes),
        oldest first; order="desc": newest first. template, status ("running", "paused", ...)
        and a window of creation times (started_after inclusive, started_before exclusive: RFC
        3339 UTC text or Unix milliseconds) filter. Raises SandboxAPIError 400 for a bad value."""
        query = {k: v for k, v in (("order", order), ("template", template), ("status", status),
                                   ("started_after", started_after),
                                   ("started_before", started_before)) if v is not None}
        o = self._transport.json("GET", "/v1/sandboxes", query=query or None)
        return [Sandbox(self, s) for s in o.get("sandboxes", [])]

    def list_sandboxes(self):
        """Seed B's name for list(): a Sandbox handle for every sandbox this key can see."""
        return self.list()

    def fork(self, snapshot, cpus=None, memory_mb=None, network=None, timeout_seconds=None):
        """Starts a new sandbox whose workspace is a snapshot's (POST /v1/snapshots/{id}/fork).
        snapshot: SnapshotInfo or its id; other arguments override the source's settings.
        Returns the new Sandbox. Raises NotFoundError, SandboxAPIError (429 over quota)."""
        sid = snapshot.id if isinstance(snapshot, SnapshotInfo) else snapshot
        body = {k: v for k, v in (("cpus", cpus), ("memory_mb", memory_mb), ("network", network),
                                  ("timeout_seconds", timeout_seconds)) if v is not None}
        o = self._transport.json("POST", "/v1/snapshots/%s/fork" % sid, json_body=body,
                                 timeout=max(self._transport.timeout, 600))
        return Sandbox(self, o)

    def get_snapshot(self, snapshot_id):
        """Returns the SnapshotInfo with this id (GET /v1/snapshots/{id}); NotFoundError."""
        return SnapshotInfo.from_json(self._transport.json("GET", "/v1/snapshots/" + snapshot_id))

    def list_snapshots(self, sandbox_id=None):
        """Returns the SnapshotInfo list (GET /v1/snapshots), of one sandbox if sandbox_id."""
        o = self._transport.json("GET", "/v1/snapshots", query={"sandbox_id": sandbox_id})
        return [SnapshotInfo.from_json(s) for s in o.get("snapshots", [])]

    def delete_snapshot(self, snapshot):
        """Deletes a snapshot (DELETE /v1/snapshots/{id}); snapshot: SnapshotInfo or id.
        Raises NotFoundError when it does not exist."""
        sid = snapshot.id if isinstance(snapshot, SnapshotInfo) else snapshot
        self._transport.request("DELETE", "/v1/snapshots/" + sid)

    def list_templates(self):
        """Returns a TemplateInfo for every installed template (GET /v1/templates)."""
        o = self._transport.json("GET", "/v1/templates")
        return [TemplateInfo.from_json(t) for t in o.get("templates", [])]

    def get_template(self, name):
        """Returns the TemplateInfo of one template (GET /v1/templates/{name}).
        Raises NotFoundError when it is not installed."""
        return TemplateInfo.from_json(self._transport.json("GET", "/v1/templates/" + name))
