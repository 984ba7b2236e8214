"""A cheap PBKDF2 for the suite's users: the hash is real, only its work factor is low.

Django's PBKDF2 takes about half a second a password on the suite's 2-core machine, and the
suite creates users and signs them in hundreds of times; the cost is not what any test is about.
The hash keeps Django's `pbkdf2_sha256$<iterations>$...` form, so a process with the default
hashers (gunicorn under test) verifies it too, reading the iteration count from the hash.
"""

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class FastPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    iterations = 1_000
