"""Errors raised by the agent-sandbox SDK.

Every failed call raises a subclass of SandboxError:
  SandboxAPIError         the server answered with an HTTP error status and (usually) the error
                          shape {"error": {"code", "message"}} of docs/adr/0007-rest-api-server.md
  NotFoundError           a SandboxAPIError with status 404 (code "not_found")
  SandboxConnectionError  the server could not be reached, or the connection broke mid-answer
"""


class SandboxError(Exception):
    """Base class of every error this SDK raises."""


class SandboxConnectionError(SandboxError):
    """The server could not be reached or the connection failed (no HTTP status to report)."""


class SandboxAPIError(SandboxError):
    """The server answered with an error status.

    Attributes:
      status_code: the HTTP status (int), e.g. 400, 401, 404, 429.
      code: the server's error code (str), e.g. "invalid_request", "not_found",
        "unauthorized", "limit_exceeded"; "http_<status>" when the body was not the error shape.
      message: the server's human-readable message (str).
      request_id: the X-Request-Id of the answer (str or None), for the server's logs.
    """

    def __init__(self, status_code, code, message, request_id=None):
        super().__init__("%s (%d): %s" % (code, status_code, message))
        self.status_code = status_code
        self.code = code
        self.message = message
        self.request_id = request_id


class NotFoundError(SandboxAPIError):
    """A SandboxAPIError for HTTP 404: the sandbox, snapshot or file does not exist (or belongs
    to another API key)."""
