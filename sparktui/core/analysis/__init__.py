"""The analysis: each source's lines scanned (matched against the catalogue, evidence kept, stages marked),
then correlated across sources into one ranked diagnosis (stalls, consequences, the root cause first)."""
