"""Every state change of DESIGN §3: one function per transition (STYLE rule 1).

core.py holds T1-T8; each later capability adds its module and one import line here.
"""

from .closure import Closed, ClosureRequest, close_run, closure_of, closure_receipt  # noqa: F401
from .core import (  # noqa: F401
    Claimed,
    Denied,
    Version,
    admission_receipt,
    admit_reply,
    approve,
    cancel_run,
    complete_run,
    db_now,
    deny_approval,
    fail_run,
    register_run,
    resume_run,
    start_admission,
    start_receipt,
    suspend_run,
    suspension_body,
    suspension_digest_of,
)
from .flows import Envelope, ParkedWait, park_flow_wait, resume_flow_wait  # noqa: F401
from .sweep import SweepResult, expire_batch, expire_suspensions, expiry_receipt  # noqa: F401
