"""Searching text for many patterns or words at once: the engines and the literals they look for, beneath the
catalogue's matcher and the redaction."""
