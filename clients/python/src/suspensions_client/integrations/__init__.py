"""Gates for agent frameworks (DESIGN §23): each turns the framework's approval request into a pause."""
