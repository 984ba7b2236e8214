"""Every state change of DESIGN §3: one function per transition (STYLE rule 1).

core.py holds T1-T8; each later capability adds its module and one import line here.
"""

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
