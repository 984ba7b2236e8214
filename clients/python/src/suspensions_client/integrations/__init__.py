"""Integrations of the client with agent frameworks and protocols (clients/python/README.md), each an optional extra:
each turns the framework's approval request into a pause and the decision back into the framework's resume."""
