"""The HTTP transport of the SDK: one connection per request, standard library only."""

import http.client
import json
import urllib.parse

from .errors import NotFoundError, SandboxAPIError, SandboxConnectionError

_USER_AGENT = "agent-sandbox-python/0.1.0"


class Transport:
    """Sends requests to one server.

    base_url: "http://host:port" or "https://host:port" (a path prefix is kept).
    api_key: sent as "Authorization: Bearer <key>" when not None.
    timeout: socket timeout in seconds for connecting and for each read.
    """

    def __init__(self, base_url, api_key=None, timeout=300.0):
        u = urllib.parse.urlsplit(base_url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError("base_url must be http://host[:port] or https://host[:port], got %r"
                             % base_url)
        self.base_url = base_url.rstrip("/")
        self._scheme = u.scheme
        self._host = u.hostname
        self._port = u.port
        self._prefix = u.path.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.closed = False

    def close(self):
        """Refuses every later request (SandboxConnectionError "client is closed")."""
        self.closed = True

    def _connect(self, timeout):
        cls = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
        return cls(self._host, self._port, timeout=timeout)

    def _target(self, path, query):
        target = self._prefix + path
        if query:
            q = {k: v for k, v in query.items() if v is not None}
            if q:
                target += "?" + urllib.parse.urlencode(q)
        return target

    def open(self, method, path, query=None, body=None, json_body=None, headers=None,
             timeout=None):
        """Sends one request; returns (connection, response) with the body unread when the
        status is 2xx (response.asb_socket is the connection's socket). Raises SandboxAPIError
        for error statuses, SandboxConnectionError when the server cannot be reached or the
        client was closed. The caller closes the connection."""
        if self.closed:
            raise SandboxConnectionError("%s %s%s: the client is closed" % (method, self.base_url,
                                                                          path))
        h = {"User-Agent": _USER_AGENT, "Accept": "application/json"}
        if self.api_key:
            h["Authorization"] = "Bearer " + self.api_key
        if json_body is not None:
            body = json.dumps(json_body).encode()
            h["Content-Type"] = "application/json"
        elif body is not None:
            h["Content-Type"] = "application/octet-stream"
        if headers:
            h.update(headers)
        if body is None and method in ("POST", "PUT"):
            body = b""
        conn = self._connect(self.timeout if timeout is None else timeout)
        try:
            conn.request(method, self._target(path, query), body=body, headers=h)
            sock = conn.sock
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise SandboxConnectionError("%s %s%s: %s" % (method, self.base_url, path, e)) from e
        if resp.status >= 400:
            try:
                data = resp.read()
            except (OSError, http.client.HTTPException):
                data = b""
            finally:
                conn.close()
            raise _api_error(resp, data)
        # The socket, for a stream that another thread must stop (FileWatch.close shuts it
        # down); conn.sock is already None when the answer closes the connection at its end.
        resp.asb_socket = sock
        return conn, resp

    def request(self, method, path, query=None, body=None, json_body=None, headers=None,
                timeout=None):
        """Like open() but reads the whole body; returns (status, bytes)."""
        conn, resp = self.open(method, path, query, body, json_body, headers, timeout)
        try:
            return resp.status, resp.read()
        except (OSError, http.client.HTTPException) as e:
            raise SandboxConnectionError("%s %s%s: reading the answer: %s"
                                         % (method, self.base_url, path, e)) from e
        finally:
            conn.close()

    def json(self, method, path, query=None, json_body=None, body=None, timeout=None,
             headers=None):
        """Sends a request and decodes the JSON answer (None for 204)."""
        status, data = self.request(method, path, query=query, json_body=json_body, body=body,
                                    headers=headers, timeout=timeout)
        if status == 204 or not data:
            return None
        return json.loads(data)


def _api_error(resp, data):
    code = "http_%d" % resp.status
    message = data.decode("utf-8", "replace").strip() or (resp.reason or "")
    try:
        err = json.loads(data)["error"]
        code, message = err["code"], err["message"]
    except (ValueError, KeyError, TypeError):
        pass
    cls = NotFoundError if resp.status == 404 else SandboxAPIError
    return cls(resp.status, code, message, resp.getheader("X-Request-Id"))


