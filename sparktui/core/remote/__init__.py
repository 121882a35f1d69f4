"""How sparktui reaches a node: SSH, the command runner, a Docker engine.

asyncssh (2.24 and older) names ``cryptography``'s DSA classes in its type annotations, and ``cryptography`` 51
marks every use of them deprecated, so importing asyncssh printed ten lines of ``CryptographyDeprecationWarning``
before any output of ours. The fault is asyncssh's, and harmless (sparktui never offers DSA keys), so the warning
is silenced here, for asyncssh's own modules only, before any module of this package imports it; a pin would hold
back cryptography's security releases."""

from __future__ import annotations

import warnings

warnings.filterwarnings("ignore", message=r"DSA is deprecated", module=r"asyncssh(\.|$)")
