"""The console's sign-in page: Django's LoginView, plus a word on a decision held back (issue 38).

An approval decided after the session ended is kept in the session and never sent
(approvals.decide); the sign-in page says so before the approver types a password, so
they know what follows: the approval page, with what they typed back in its form.
"""

from typing import Any

from django.contrib.auth import views as auth_views

from ..logins import StaffAuthenticationForm
from .approvals import UNSENT

# What was held back, in the approver's words, by the form's decision (anything else: "decision").
HELD = {"approve": "approval", "deny": "denial", "respond": "answer"}


class ConsoleLoginView(auth_views.LoginView):
    template_name = "registration/login.html"
    authentication_form = StaffAuthenticationForm
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        # Read, not popped: the approval page shows the unsent text after the sign-in and forgets it then.
        kept = self.request.session.get(UNSENT)
        if isinstance(kept, dict):
            context["held_back"] = HELD.get(str(kept.get("decision")), "decision")
        return context
