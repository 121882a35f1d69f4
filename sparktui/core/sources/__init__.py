"""Where lines come from: files today; SSH, Docker and Ray streams build on the same contract."""
