"""The pure core: reading, classifying and matching log lines, tracking start-up stages, ranking findings.

Nothing in this package imports a user interface toolkit.
"""
