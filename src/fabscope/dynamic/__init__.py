"""fabscope.dynamic: event-driven simulation of message programs over the flow model."""
