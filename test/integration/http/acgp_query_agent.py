"""The real acgp client (PyPI 0.1.4) asking Steward's query routes, configured only through ACGP_* variables
(the test runs it with ACGP_FAIL_SILENTLY=false, so an HTTP error raises instead of being logged).

argv: the trace id the test stores while get_score() waits for it, then an id stored only under another agent
(answered as nothing stored).
Prints "asking" before the first query (the test stores the verdict after seeing it), then one JSON line.
"""
import json
import sys
import time

from acgp import ACGPClient  # noqa: E402

stored_later, not_ours = sys.argv[1], sys.argv[2]
client = ACGPClient()


def call(fn, *args, **kwargs):
    try:
        return {"value": fn(*args, **kwargs)}
    except Exception as e:  # what a 404 did under ACGP_FAIL_SILENTLY=false
        return {"raised": f"{type(e).__name__}: {e}"}


print("asking", flush=True)
t0 = time.time()
score = call(client.get_score, stored_later, max_attempts=12, initial_delay=0.3)
waited = round(time.time() - t0, 2)
out = {
    "score": score,
    "score_waited_s": waited,
    "not_ours_score": call(client.get_score, not_ours, max_attempts=2, initial_delay=0.1),
    "not_ours_feedback": call(client.get_feedback, not_ours, max_attempts=2, initial_delay=0.1),
    "not_ours_oversight": call(client.get_oversight_mode, not_ours),
}
print(json.dumps(out), flush=True)
client.close(timeout=2)
