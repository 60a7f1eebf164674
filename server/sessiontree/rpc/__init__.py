"""The JSON-RPC transport: framing, envelope checks and the stdio channel, free of pygls."""
