"""Every state change of docs/api.md, "2. Lifecycle": one function per transition (STYLE rule 1), by theme.

claims.py   the run lock, the fenced move, the event writer (the clock: suspensions/clock.py)
claiming.py the one claim path every door goes through (`through(door)`): lock, actor, current-or-replay, checks, writes
runs.py     T1 register, T2 suspend (and both in one call), T7 cancel, T8 complete and fail
resumes.py  T3 one-shot resume, T4 agent-reply admission, T5 start
early.py    early results: kept before their pause, and the resume they complete
callbacks.py callback URLs: T3 by a signed capability instead of a token
approvals.py T4 approve (votes) and respond, T6 deny, and `decide` for the API and the console
flows.py    correlation-keyed waits
deadlines.py more time for a live pause (an operator's extension)
escalations.py escalation chains' steps, run by the sweep before the deadline
sweep.py    T9 expiry, the batch form of the claim path
sql/        the hand-written SQL, in one place: rows.py (the run lock, a transition's writes), expiry.py, push.py
closure.py  T10 closure
outbox.py   announced events (wakeups.py: the fan-out's coalesced wake-ups), delivery.py
webhooks.py webhook endpoints (configuration, no Event): import the module itself
idempotency.py Idempotency-Keys of creates (the HTTP side is api/idempotency.py): import the module

Each module cites the docs/ section it implements. Wire shapes are rendered in suspensions/presenters.py, never here.
"""

from ..clock import db_now  # noqa: F401
from .approvals import Decision, Denied, Voted, approve, decide, deny_approval, respond  # noqa: F401
from .callbacks import callback_token, resume_by_callback  # noqa: F401
from .claims import Claimed, Version, suspension_digest_of  # noqa: F401
from .closure import Closed, ClosureRequest, close_run, closure_of  # noqa: F401
from .deadlines import Extended, extend_deadline  # noqa: F401
from .early import Kept, keep_early_result  # noqa: F401
from .flows import Envelope, ParkedWait, park_flow_wait, resume_flow_wait  # noqa: F401
from .resumes import admit_reply, resume_run, start_admission  # noqa: F401
from .runs import (  # noqa: F401
    Paused,
    cancel_run,
    complete_run,
    fail_run,
    pause_run,
    register_and_pause,
    register_run,
    suspend_run,
)
from .sweep import SweepResult, expire_batch, expire_suspensions  # noqa: F401
