"""What every decision of an approval checks (docs/policies.md, "Quorum and separation of duties"): that the
version names the approval, the approval's record under the run's lock, and who may decide it.

The vote (services/votes.py), respond and deny (services/approvals.py) and the deadline's extension
(services/deadlines.py) share them; so do the console's pages, which show who may not decide.
"""

from uuid import UUID

from .. import floors
from ..exceptions import InvalidRequest, NotSuspended, SeparationOfDuties
from ..models import Approval, ApprovalVote
from ..principals import Principal
from .claims import Locked, Version
from .sql.rows import select_row


def check_version(suspension_id: UUID | str, version: Version) -> None:
    if str(version.suspension_id) != str(suspension_id):
        raise InvalidRequest(
            "version.suspension_id must name the approval being decided",
            errors={"version": {"suspension_id": ["Mismatch."]}},
        )


def record_of(t: Locked, version: Version, *, votes: bool = False) -> Approval:
    """The approval record of the pause the version names; with `votes`, `has_votes` says whether any was cast."""
    where = {"suspension_id": version.suspension_id, "run_id": t.run.id}
    record = select_row(Approval, where, flag=("has_votes", ApprovalVote, "suspension_id") if votes else None)
    if record is None:
        raise NotSuspended(f"run {t.run.id} has no approval {version.suspension_id}")
    return record


def check_duties(principal: Principal, record: Approval) -> None:
    """Separation of duties (docs/policies.md, "Quorum and separation of duties"): with `exclude_requester`, whoever
    stored the pause may not decide it.

    The same person counts whatever principal they use: a user, or a token linked to that user.
    An approval floor may demand that only principals of a person decide (floors.check_person).
    """
    floors.check_person(principal, record)
    # Acting for the requester is refused whatever the policy (docs/identity.md, "Delegation"): a delegation
    # lends a person's vote, and the requester has none on their own request.
    for_requester = principal.for_user_id is not None and principal.for_user_id == record.requester_user_id
    if principal.acting_for is not None and (principal.acting_for == record.requested_by or for_requester):
        raise SeparationOfDuties(f"{principal.acting_for} asked for this approval: nobody may decide it for them")
    if not record.exclude_requester:
        return
    same_user = principal.user_id is not None and principal.user_id == record.requester_user_id
    if principal.name == record.requested_by or same_user:
        raise SeparationOfDuties(f"{principal.name} asked for this approval and may not decide it")
