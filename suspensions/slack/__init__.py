"""Slack approvals (DESIGN §21): the Block Kit message, its posting and updating, and the interactions endpoint."""
