"""Where lines come from: files, followed files, stdin, SSH, Docker, journald, Ray, /metrics, bundles and
replays, all on one contract (base.LiveSource: a stream of batches with a cursor to resume from)."""
