"""The wire layer: framing, envelope checks, the stdio channel, the JSON-RPC endpoint and LSP's
lifecycle; `endpoint.py` says what the project owns here, and why."""
