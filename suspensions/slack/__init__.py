"""Slack approvals (docs/notifications.md, "Slack"): the Block Kit message, its posting and updating, and the
interactions endpoint."""
