"""A small agent on the real acgp client (PyPI 0.1.4), configured only through ACGP_* variables.

Prints one JSON line: the trace ids it sent and the batch results of its flush.
"""
import json
import sys

from acgp import ACGPClient  # noqa: E402

client = ACGPClient()  # ACGP_ENDPOINT, ACGP_API_KEY from the environment
ids = []
for i in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
    with client.trace(agent_type="executor", goal=f"answer question {i}", user_query=f"question {i}") as t:
        t.set_reasoning(f"step {i}: looked it up")
        t.set_documents(["handbook.md"])
        t.set_output(f"answer {i}", output_type="analysis")
    ids.append(t.trace_id)
results = client.flush()
print(json.dumps({"trace_ids": ids, "results": [{"success": r.success, "events_sent": r.events_sent, "events_failed": r.events_failed, "error": r.error} for r in results]}), flush=True)
client.close(timeout=5)
