"""Integrations of the client with agent frameworks and protocols (DESIGN §23); each an optional extra."""
