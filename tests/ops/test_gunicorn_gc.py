"""gunicorn.conf.py's `post_worker_init`: what a web worker has loaded leaves the cyclic GC's reach
(docs/performance.md, "Where the time goes")."""

import gc
import runpy
from pathlib import Path

CONF = Path(__file__).resolve().parents[2] / "gunicorn.conf.py"


def test_a_worker_freezes_what_it_has_loaded_so_a_full_collection_walks_only_what_requests_made():
    hooks = runpy.run_path(str(CONF))
    gc.unfreeze()
    tracked = len(gc.get_objects())
    try:
        hooks["post_worker_init"](object())
        frozen = gc.get_freeze_count()
        assert frozen >= tracked * 0.9, (frozen, tracked)
        assert len(gc.get_objects()) < frozen / 10
    finally:
        gc.unfreeze()
    assert gc.get_freeze_count() == 0
