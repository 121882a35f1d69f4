"""Whether a started server serves: vLLM's ``/metrics`` read, the line sparktui keeps of each reading, a small
HTTP client over any byte stream, and the smoke test (one short completion)."""
