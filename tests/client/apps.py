"""The WSGI app the client tests serve: the project's, with test_faults' kill-after-commit hook, once per marker.

A client resends the identical request, headers included, so the hook must
fire on the first attempt only: `X-Test-Kill-Once: <path>` kills the worker
after its transaction committed when that file does not exist yet (and
creates it); every later attempt is served normally.
"""

import os
from collections.abc import Callable, Iterable
from typing import Any

from tests.races.test_faults import KILL_HEADER, killing_app


def kill_once_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    marker = environ.get("HTTP_X_TEST_KILL_ONCE")
    if marker:
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            pass
        else:
            environ[KILL_HEADER] = "1"
    return killing_app(environ, start_response)
