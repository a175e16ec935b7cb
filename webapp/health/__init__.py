"""Worker health: each worker's canaries, the queues it consumes because of them, and the
status page and readiness probe built on them."""
