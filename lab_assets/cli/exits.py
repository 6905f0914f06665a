"""`lab`'s exit codes: 0 success, 1 a partition failed (a study: no trial succeeded), 2 bad input
(a sweep or study file, a flag), 130 interrupted."""

BAD_INPUT, FAILED = 2, 1
INTERRUPTED = 130  # Ctrl-C, as a shell reports a SIGINT
