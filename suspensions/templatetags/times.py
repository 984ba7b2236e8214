"""Times in the console's templates, written one way (suspensions/timefmt.py).

`{{ moment|when }}` is a <time class="moment"> element: "30 Nov 2026, 17:51:50 UTC" with the
relative hint in its title; `{{ moment|when:"rel" }}` also shows the hint ("… · 4 min ago").
The server writes UTC; static/console/console.js rewrites each `time.moment` to the viewer's
local time and zone (issue 38), keeping the UTC text in the title, so a page without
JavaScript still says when, in UTC.
`{{ text|times_in_text }}` rewrites ISO times inside an untrusted text, which stays escaped.
"""

from django import template
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from .. import timefmt

register = template.Library()


@register.filter
def when(value: object, hint: str = "") -> SafeString | str:
    """A datetime (or an ISO text of one) as a <time>; anything else, such as None, as a dash."""
    moment = timefmt.parse(value)
    if moment is None:
        return "—"
    relative = timefmt.relative(moment, timezone.now())
    if hint == "rel":
        return format_html(
            '<time class="moment" datetime="{}" title="{}">{}</time> <span class="muted time-hint">· {}</span>',
            moment.isoformat(),
            relative,
            timefmt.absolute(moment),
            relative,
        )
    return format_html(
        '<time class="moment" datetime="{}" title="{}">{}</time>',
        moment.isoformat(),
        relative,
        timefmt.absolute(moment),
    )


@register.filter
def times_in_text(value: object) -> str:
    # A plain str, never marked safe: autoescaping still applies to the untrusted text around the times.
    return timefmt.times_in_text(str(value))
