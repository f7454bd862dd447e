"""Rendering with a budget. Templates are a platform team's code: a render runs in a worker
process whose memory the operating system caps and whose time the hook bounds, so that one
runaway template answers an error for its resource and delays no other. The only package
that starts processes."""
