#!/usr/bin/env python3
"""Fork of a running sandbox on the microvm backend (docs/adr/0025): the children of a microVM
are microVMs with the parent's workspace at the fork (through the archive path: the backend
keeps no workspace images), the parent runs on. test_fork.py's main test, each sandbox a VM.
Skips with the reason where QEMU or the microVM guest is missing.
"""
from harness import main
from test_fork import ForkTest
from test_pause_microvm import MICROVM_ENV, OnMicrovm


class MicrovmForkTest(OnMicrovm, ForkTest):
    SERVER_ENV = dict(ForkTest.SERVER_ENV, **MICROVM_ENV)

    # The quota and bad-input cases do not depend on the backend (test_fork.py runs them).
    test_bad_counts_and_unknown_sandboxes_are_refused_before_any_work = None
    test_children_past_the_quota_answer_429_each_and_leave_nothing = None


del ForkTest  # run only the microVM variant from this file

if __name__ == "__main__":
    main()
