"""agent_sandbox: Python client of the agent-sandbox server (standard library only).

    from agent_sandbox import SandboxClient
    client = SandboxClient()            # $AGENT_SANDBOX_URL, $AGENT_SANDBOX_API_KEY
    with client.create() as sb:
        print(sb.exec("echo hi").stdout)
"""

from .client import SandboxClient
from .errors import NotFoundError, SandboxAPIError, SandboxConnectionError, SandboxError
from .sandbox import Sandbox
from .watch import FileWatch
from .types import (Context, ErrorEvent, Execution, ExecutionError, Result,
                    ExecEvent, ExecResult, ExitEvent, FileEvent, FileInfo, FileWritten,
                    ForkResult, OutputEvent, PreviewInfo, ProcessInfo, SandboxInfo, SkippedEvent,
                    SnapshotInfo, TemplateInfo)

__version__ = "0.1.0"

__all__ = [
    "SandboxClient", "Sandbox", "SandboxError", "SandboxAPIError", "NotFoundError",
    "SandboxConnectionError", "ExecResult", "OutputEvent", "ExitEvent", "ErrorEvent",
    "FileInfo", "SandboxInfo", "SnapshotInfo", "TemplateInfo", "ProcessInfo", "SkippedEvent",
    "ExecEvent", "FileWritten", "PreviewInfo", "Context", "Execution", "ExecutionError", "Result",
    "FileEvent", "FileWatch", "ForkResult",
]
