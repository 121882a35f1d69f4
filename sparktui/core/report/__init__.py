"""An incident written out: Markdown, HTML and JSON reports and a redacted bundle that replays."""
