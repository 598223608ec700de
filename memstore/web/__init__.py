"""What the HTTP adapters (MCP over HTTP, the inspector) share."""
