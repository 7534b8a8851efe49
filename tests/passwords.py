"""The password hasher of the test processes: PBKDF2-SHA256 stored exactly as production stores
it (`pbkdf2_sha256$<iterations>$<salt>$<hash>`, so any process of the service, a gunicorn or
a worker a test starts, verifies it), at 1,000 iterations instead of Django's 1,000,000.

Each user a test makes hashes a password, and each password sign-in checks one: about 0.23 s
of CPU apiece at the full count on this machine, minutes of a `make test` run. A process of
the service that checks such a password hashes it again at the full count, as it would after
Django raised its default.
"""

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class FastPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    iterations = 1_000
