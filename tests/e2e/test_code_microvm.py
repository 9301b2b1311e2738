#!/usr/bin/env python3
"""The code interpreter (test_code.py, ADR 0019) on the microvm backend (docs/adr/0025): every
test of its classes with each sandbox a QEMU microVM, real kernels (ipykernel in `python`,
Node's vm in `node`, bash in `base`) in the guest. Skips with the reason where QEMU or the
microVM guest is missing, and per test where its template is not built.
"""
from harness import main
from test_code import (BashContexts, HostileCode, JavaScriptContexts, PerExecutionEnv,
                       PythonContexts)
from test_pause_microvm import MICROVM_ENV, OnMicrovm


class MicrovmPythonContexts(OnMicrovm, PythonContexts):
    SERVER_ENV = dict(PythonContexts.SERVER_ENV, **MICROVM_ENV)


class MicrovmJavaScriptContexts(OnMicrovm, JavaScriptContexts):
    SERVER_ENV = dict(JavaScriptContexts.SERVER_ENV, **MICROVM_ENV)


class MicrovmBashContexts(OnMicrovm, BashContexts):
    SERVER_ENV = dict(BashContexts.SERVER_ENV, **MICROVM_ENV)


class MicrovmPerExecutionEnv(OnMicrovm, PerExecutionEnv):
    SERVER_ENV = dict(PerExecutionEnv.SERVER_ENV, **MICROVM_ENV)


class MicrovmHostileCode(OnMicrovm, HostileCode):
    SERVER_ENV = dict(HostileCode.SERVER_ENV, **MICROVM_ENV)
    # ipykernel's start in a guest under TCG takes 10-15 s of it (22 s seen in all).
    FLOOD_ANSWERED_WITHIN_S = 45


# Run only the microVM variants from this file.
del BashContexts, HostileCode, JavaScriptContexts, PerExecutionEnv, PythonContexts

if __name__ == "__main__":
    main()
