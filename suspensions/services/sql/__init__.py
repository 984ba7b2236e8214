"""The service's hand-written SQL, in one place (docs/decisions.md, "The plain core"): what the ORM cannot say, or says
much slower.

Everything else is the ORM. One module per user:

- rows.py: the run lock and a transition's rows (`lock_run`, `Writes`), built
  from the models' `_meta`, for services/claims.py and every door;
- expiry.py: the sweep's re-read of a locked batch and its set-based writes
  (T9; docs/exactly-once.md, "6. The other doors, and the sweep"), for services/sweep.py;
- push.py: the fan-out's hold (`HOLD`) and a delivery's claim
  (`CLAIM_MESSAGE`), for services/fan_out_steps.py and services/delivery.py;
- idempotency.py: the take of an Idempotency-Key (`TAKE`: INSERT ... ON
  CONFLICT, which the ORM cannot say with its WHERE), for services/idempotency.py.

Every INSERT written by hand names every column of its table:
tests/services/test_sql.py holds each column list to the models (and so to
the migrations), so a field added to a model and forgotten here fails a test
instead of being dropped.
"""
