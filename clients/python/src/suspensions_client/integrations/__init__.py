"""Gates for agent frameworks: each turns the framework's approval request into a pause and the decision back."""
