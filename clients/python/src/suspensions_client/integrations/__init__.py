"""Gates for agent frameworks (DESIGN §23): each turns a framework's approval request into a pause and back."""
