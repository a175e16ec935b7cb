"""What a run sends out: work to the workers by Celery task name (`dispatch`), and events to
the open run pages over the channel layer (`live`). Both the user-side services and the
worker send through here, so neither needs the other.
"""
