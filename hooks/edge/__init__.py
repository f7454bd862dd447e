"""The edge: what the world says, gathered before a sync runs (asynchronously, with
timeouts) and handed to the pure core as `Facts`. The only place that may talk to another
service."""
