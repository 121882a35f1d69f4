"""The cockpit: a Textual app over the core pipeline (the only package that imports Textual)."""
