"""The edge: where llmdeploy meets the world outside its pure core. The facts of a sync (the
clock today) are gathered here before it runs, and template folders are read from disk here.
The only place that may talk to another service."""
