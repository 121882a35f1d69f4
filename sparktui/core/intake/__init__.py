"""The one way into the analysis: every input is a producer that hands what it reads to one sink, which keeps
each source's books and merges into the correlation in one place."""
