"""An agent on the real acgp client (PyPI 0.1.4) that listens to its SSE stream and queries its scores.

Configured only through ACGP_* variables. Sends N traces, then (argv[2] == "pii") one whose output carries a US
social security number, which the shipped data guard blocks; waits for the stream to report every one of them
(wait_for_feedback), then asks /query/scores for each clean one (get_score, which retries until the trace is
processed) and get_feedback / get_oversight_mode for the blocked one. Prints one JSON line.
"""
import json
import sys
import threading
import time

from acgp import ACGPClient  # noqa: E402

events = []
lock = threading.Lock()


def on_feedback(trace_id, data):
    with lock:
        fb = data.get("feedback") or {}
        events.append({"trace_id": trace_id, "keys": sorted(data.keys()), "intervention": data.get("intervention"),
                       "feedback": {"source": fb.get("source"), "intervention": fb.get("intervention"),
                                    "oversight_mode": fb.get("oversight_mode"), "reasons": fb.get("reasons")}})


client = ACGPClient(on_feedback=on_feedback)  # ACGP_ENDPOINT, ACGP_API_KEY; SSE starts with the callback
deadline = time.time() + 20
while not client.sse_connected and time.time() < deadline:
    time.sleep(0.05)
connected = client.sse_connected
ids = []
for i in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
    with client.trace(agent_type="executor", goal=f"answer question {i}", user_query=f"question {i}") as t:
        t.set_reasoning(f"step {i}: looked it up in the handbook")
        t.set_documents(["handbook.md"])
        t.set_output(f"The answer to question {i} is in section {i} of the handbook.", output_type="analysis")
    ids.append(t.trace_id)
pii_id = None
if len(sys.argv) > 2 and sys.argv[2] == "pii":
    with client.trace(agent_type="executor", goal="look up the customer", user_query="who is it?") as t:
        t.set_reasoning("found the record")
        t.set_output("The customer's SSN is 123-45-6789.", output_type="analysis")
    pii_id = t.trace_id
all_seen = client.wait_for_feedback(timeout=45)
scores = {tid: client.get_score(tid, max_attempts=12, initial_delay=0.5) for tid in ids}
pii = None
if pii_id:
    feedback = client.get_feedback(pii_id, max_attempts=12, initial_delay=0.5)
    pii = {"trace_id": pii_id, "feedback": (feedback or {}).get("feedback"), "oversight_mode": client.get_oversight_mode(pii_id)}
with lock:
    seen = list(events)
print(json.dumps({"connected": connected, "trace_ids": ids, "all_seen": all_seen, "pending": client.pending_feedback_count, "events": seen, "scores": scores, "pii": pii}), flush=True)
client.close(timeout=5)
